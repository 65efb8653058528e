// Unbounded work per request (issue 12, item 3) over HTTP: options out of range and requests past
// a limit are 422 naming it; a request past its deadline stops using the model; a schema-heavy
// request is counted by its cost, so load shedding does not refuse the ordinary requests after
// it; a drain cancels the work still running after drain_timeout; a client that goes away stops
// the work for its request.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <future>
#include <thread>

#include "engine/engine_impl.h"
#include "server/metric_sample.h"
#include "server/raw_http_client.h"
#include "server/server_test_util.h"
#include "uie/fixtures.h"

namespace rexnlu::server::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

httplib::Result post(httplib::Client& c, const Json& body) { return c.Post("/v1/extract", body.dump(), "application/json"); }


void expect_error(const httplib::Result& r, int status, const std::string& type, std::initializer_list<const char*> fragments) {
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, status) << r->body;
  const Json body = body_json(r);
  EXPECT_EQ(body.value("error_type", ""), type) << r->body;
  for (const char* f : fragments) EXPECT_NE(r->body.find(f), std::string::npos) << r->body << " lacks " << f;
}

// An engine over a fake model that takes `per_sequence` per prompt sequence and finds nothing.
std::unique_ptr<Engine> slow_fake_engine(std::chrono::microseconds per_sequence,
                                         std::atomic<int64_t>* sequences = nullptr) {
  auto model = std::make_unique<uie::testing::FakeLinkModel>([per_sequence, sequences](const models::SequenceInput& s) {
    std::this_thread::sleep_for(per_sequence);
    if (sequences) ++*sequences;
    return uie::testing::no_links(s);
  });
  return std::make_unique<Engine>(std::make_unique<Engine::Impl>(
      Engine::Impl{text::Tokenizer::from_model_dir(tiny_model_dir(), models::rex::added_tokens()), std::move(model), {}}));
}

const Json kThreeLevels = Json::parse(R"({"人物": {"组织机构": {"地点": null}}})");

TEST(RequestLimits, OptionsOutOfRangeAre422NamingTheValue) {
  TestServer s;
  auto c = s.client();
  expect_error(post(c, {{"text", "张三在北京"}, {"schema", kThreeLevels}, {"options", {{"link_threshold", -1e9}}}}), 422,
               "invalid_request", {"link_threshold", "-1000000000"});
  expect_error(post(c, {{"text", "张三"}, {"schema", {{"人物", nullptr}}}, {"options", {{"max_len", 10000000000}}}}), 422,
               "invalid_request", {"max_len", "10000000000"});
  auto ok = post(c, {{"text", "张三"}, {"schema", {{"人物", nullptr}}}, {"options", {{"link_threshold", 1.5}}}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST(RequestLimits, RequestsPastALimitAre422NamingTheLimitAndTheValue) {
  ServerConfig config;
  config.limits.max_text_bytes = 60;
  config.limits.max_schema_types = 5;
  TestServer s(config);
  auto c = s.client();
  expect_error(post(c, {{"text", std::string(61, 'a')}, {"schema", {{"人物", nullptr}}}}), 422, "limit_exceeded",
               {"61 bytes", "max_text_bytes is 60"});
  expect_error(post(c, {{"texts", {"a", std::string(61, 'a')}}, {"schema", {{"人物", nullptr}}}}), 422, "limit_exceeded",
               {"texts[1]: ", "max_text_bytes"});
  Json wide = Json::object();
  for (int i = 0; i < 6; ++i) wide[std::string("t").append(std::to_string(i))] = nullptr;
  expect_error(post(c, {{"text", "张三"}, {"schema", wide}}), 422, "limit_exceeded", {"6 type names", "max_schema_types is 5"});

  // A permissive but valid threshold on a 3-level schema: every span links at every level. It
  // hits a work limit with a short answer instead of a 56 MB one.
  auto r = post(c, {{"text", "一二三四五六七八九十一二三四五六七八九十"}, {"schema", kThreeLevels},
                    {"options", {{"link_threshold", -20}}}});
  expect_error(r, 422, "limit_exceeded", {"the limit max_"});
  EXPECT_LT(r->body.size(), 1000u);
  const Json info = body_json(c.Get("/info"));
  EXPECT_EQ(info["limits"]["max_text_bytes"], 60);
  EXPECT_EQ(info["limits"]["max_paths"], 10000);
  auto ok = post(c, {{"text", "张三在北京"}, {"schema", {{"人物", nullptr}}}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST(RequestLimits, ARequestPastItsDeadlineStopsUsingTheModel) {
  // The batcher thread is held before the batch until the request's deadline has passed.
  ServerConfig config;
  config.deadline = 200ms;
  config.before_batch = [] { std::this_thread::sleep_for(300ms); };
  TestServer s(config);
  auto c = s.client();
  expect_error(post(c, {{"text", "张三在北京大学读书"}, {"schema", kThreeLevels}}), 504, "deadline_exceeded", {});
  for (int i = 0; i < 500 && metric(c, "rexnlu_batches_total") < 1; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(metric(c, "rexnlu_batches_total"), 1);
  EXPECT_EQ(metric(c, "rexnlu_forward_calls_total"), 0);  // the engine gave up before its first model call
}

TEST(RequestLimits, ASchemaHeavyRequestIsCountedSoOrdinaryOnesAreNotShed) {
  // 2 ms per prompt sequence: the 10,000-type schema is a few hundred prompts (about a second,
  // with parsing), an ordinary request one. Counted by text tokens only, the big request made the
  // service think every token costs a tenth of a second or more, and it refused most of the next
  // burst (17 of 20 in the issue).
  ServerConfig config;
  config.deadline = 30000ms;
  config.limits.max_schema_types = 20000;
  TestServer s(config, false);
  s.server().set_engine(slow_fake_engine(2ms));
  auto c = s.client();
  Json many = Json::object();
  for (int i = 0; i < 10000; ++i) many[std::string("类型").append(std::to_string(i))] = nullptr;
  const Clock::time_point start = Clock::now();
  auto big = post(c, {{"text", "国务院总理李克强"}, {"schema", many}});
  ASSERT_TRUE(big);
  ASSERT_EQ(big->status, 200) << big->body;
  std::printf("the 10,000-type request took %.2f s\n", std::chrono::duration<double>(Clock::now() - start).count());
  std::vector<std::future<int>> burst;
  for (int i = 0; i < 20; ++i) {
    burst.push_back(std::async(std::launch::async, [&] {
      auto cl = s.client();
      auto r = post(cl, {{"text", "国务院总理李克强在北京会见了比尔盖茨"}, {"schema", {{"人物", nullptr}, {"地点", nullptr}}}});
      return r ? r->status : -1;
    }));
  }
  int refused = 0;
  for (auto& f : burst) {
    const int status = f.get();
    refused += status == 429;
    EXPECT_TRUE(status == 200 || status == 429) << status;
  }
  EXPECT_EQ(refused, 0);
}

// About 60 KB of text, one sequence per forward (about 45 windows): the work can stop between any two.
std::string long_request() {
  std::string text;
  while (text.size() < 60000) text += "小明在北京大学读书，后来去了上海交通大学任教。";
  return Json{{"text", text}, {"schema", {{"人物", nullptr}}}, {"options", {{"max_batch_cells", 512 * 512}}}}.dump();
}

const std::string k499 = R"(rexnlu_http_requests_total{route="/v1/extract",status="499"})";


TEST(RequestLimits, DrainCancelsWorkStillRunningAfterTheDrainTimeout) {
  // 20 ms per sequence; the request has about 60 windows of text: over a second of model work.
  ServerConfig config;
  config.drain_timeout = 100ms;
  std::atomic<int64_t> sequences{0};
  auto server = std::make_unique<TestServer>(config, false);
  server->server().set_engine(slow_fake_engine(20ms, &sequences));
  auto in_flight = std::async(std::launch::async, [&] {
    auto cl = server->client();
    return cl.Post("/v1/extract", long_request(), "application/json");
  });
  while (sequences.load() < 2) std::this_thread::sleep_for(1ms);
  const Clock::time_point stop = Clock::now();
  server->server().stop();
  auto r = in_flight.get();
  EXPECT_LT(Clock::now() - stop, 1s);
  expect_error(r, 503, "shutting_down", {});
  EXPECT_LT(sequences.load(), 20);  // of ~45 windows
  server.reset();
}

TEST(RequestLimits, AClientThatGoesAwayStopsItsRunningWork) {
  // 20 ms per sequence: about a second of model work, which ran to the end for nobody.
  std::atomic<int64_t> sequences{0};
  TestServer s({}, false);
  s.server().set_engine(slow_fake_engine(20ms, &sequences));
  {
    RawClient gone(s.port());
    ASSERT_TRUE(gone.send(post_request("/v1/extract", long_request())));
    while (sequences.load() < 2) std::this_thread::sleep_for(1ms);
  }  // the client closes the connection
  auto c = s.client();
  wait_for_metric(c, k499, 1);  // logged as 499: the client closed the request
  EXPECT_LT(sequences.load(), 20);  // of ~45 windows
  auto ok = post(c, {{"text", "张三在北京"}, {"schema", {{"人物", nullptr}}}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST(RequestLimits, AQueuedRequestWhoseClientWentAwayNeverRuns) {
  std::atomic<int64_t> sequences{0};
  TestServer s({}, false);
  s.server().set_engine(slow_fake_engine(30ms, &sequences));
  auto running = std::async(std::launch::async, [&] {
    auto cl = s.client();
    return cl.Post("/v1/extract", long_request(), "application/json");
  });
  while (sequences.load() < 2) std::this_thread::sleep_for(1ms);
  auto c = s.client();
  {
    RawClient gone(s.port());
    ASSERT_TRUE(gone.send(post_request("/v1/extract", R"({"text": "张三在北京", "schema": {"人物": null}})")));
    wait_for_metric(c, "rexnlu_queue_depth", 1);
  }  // goes away while queued behind the running request
  auto r = running.get();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  wait_for_metric(c, k499, 1);
  EXPECT_EQ(metric(c, "rexnlu_batches_total"), 1);  // the queued request was never run
}

}  // namespace
}  // namespace rexnlu::server::testing
