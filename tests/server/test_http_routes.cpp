// Every route and status code of the HTTP service against a real server on 127.0.0.1 with the
// bundled tiny model. Extraction results are compared with the original implementation's outputs
// (tests/data/rexuninlu_tiny/e2e_cases.jsonl).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <future>
#include <mutex>
#include <random>
#include <regex>

#include "server/metric_sample.h"
#include "server/server_test_util.h"

namespace rexnlu::server::testing {
namespace {

using namespace std::chrono_literals;

const Json& e2e_case(const std::string& id) {
  static const std::map<std::string, Json> cases = [] {
    std::map<std::string, Json> out;
    std::ifstream in(std::string(REXNLU_TEST_DATA) + "/rexuninlu_tiny/e2e_cases.jsonl");
    std::string line;
    while (std::getline(in, line)) {
      Json c = Json::parse(line);
      out[c["id"].get<std::string>()] = c;
    }
    return out;
  }();
  return cases.at(id);
}

// The response's paths without probabilities, in the fixture's shape.
Json paths_of(const Json& result) {
  Json out = Json::array();
  for (const Json& path : result.at("output")) {
    Json p = Json::array();
    for (const Json& item : path) p.push_back({{"type", item["type"]}, {"span", item["span"]}, {"offset", item["offset"]}});
    out.push_back(p);
  }
  return out;
}

httplib::Result post(httplib::Client& c, const std::string& path, const std::string& body) {
  return c.Post(path.c_str(), body, "application/json");
}
httplib::Result post(httplib::Client& c, const std::string& path, const Json& body) { return post(c, path, body.dump()); }


const char* const kNerCases[] = {"ner/cf108c98d1f686e65d7a5676af5a0af1", "ner/f76b975537952eec8064c88e212c23c6",
                                 "ner/f29f5a8b3923c5cd934e01e75118b752", "ner/f6f5827b767d29f18f46c1647d0f391d"};

Json ner_body(const char* id) {
  const Json& c = e2e_case(id);
  return {{"text", c["text"]}, {"schema", c["schema"]}};
}

// Holds the batcher thread before each batch until released (ServerConfig::before_batch).
class Gate {
 public:
  std::function<void()> hook() {
    return [this] {
      std::unique_lock lock(mutex_);
      ++entered_;
      changed_.notify_all();
      changed_.wait(lock, [&] { return open_; });
    };
  }
  void close() { set(false); }
  void open() { set(true); }
  void wait_entered(int n) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return entered_ >= n; });
  }

 private:
  void set(bool v) {
    std::lock_guard lock(mutex_);
    open_ = v;
    changed_.notify_all();
  }
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = true;
  int entered_ = 0;
};


TEST(HttpRoutes, HealthInfoPageOpenApi) {
  TestServer s;
  auto c = s.client();
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(body_json(health), Json({{"status", "ok"}}));

  auto info = c.Get("/info");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->status, 200);
  const Json j = body_json(info);
  EXPECT_EQ(j["model"]["loaded"], true);
  EXPECT_EQ(j["model"]["path"], tiny_model_dir());
  EXPECT_EQ(j["model"]["precision"], "fp32");
  EXPECT_EQ(j["limits"]["max_body_bytes"], 1 << 20);
  EXPECT_NE(std::find(j["tasks"].begin(), j["tasks"].end(), "ner"), j["tasks"].end());

  auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page->body.find("app.js"), std::string::npos);
  for (const char* asset : {"/app.js", "/style.css"}) {
    auto r = c.Get(asset);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << asset;
    EXPECT_GT(r->body.size(), 100u) << asset;
  }
  auto api = c.Get("/openapi.json");
  ASSERT_TRUE(api);
  EXPECT_EQ(body_json(api)["openapi"], "3.0.3");
}

TEST(HttpRoutes, ExtractMatchesTheOriginal) {
  TestServer s;
  auto c = s.client();
  for (const char* id : kNerCases) {
    auto r = post(c, "/v1/extract", ner_body(id));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(paths_of(body_json(r)), e2e_case(id)["expected"]) << id;
    // The original service's route and shape.
    auto alias = post(c, "/extract", ner_body(id));
    ASSERT_TRUE(alias);
    ASSERT_EQ(alias->status, 200) << alias->body;
    EXPECT_EQ(paths_of(body_json(alias)), e2e_case(id)["expected"]) << id;
  }
  // Several texts with one schema: one result each, in order.
  Json many = {{"schema", e2e_case(kNerCases[0])["schema"]}, {"texts", Json::array()}};
  for (const char* id : kNerCases) many["texts"].push_back(e2e_case(id)["text"]);
  auto r = post(c, "/v1/extract", many);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const Json results = body_json(r)["results"];
  ASSERT_EQ(results.size(), std::size(kNerCases));
  for (size_t i = 0; i < results.size(); ++i) EXPECT_EQ(paths_of(results[i]), e2e_case(kNerCases[i])["expected"]);
}

TEST(HttpRoutes, TasksBuildTheTextAndSchema) {
  TestServer s;
  auto c = s.client();
  // ner: the labels become the schema.
  const Json& ner = e2e_case(kNerCases[0]);
  auto r = post(c, "/v1/extract", Json{{"text", ner["text"]}, {"task", "ner"}, {"labels", {"人物", "地理位置", "组织机构"}}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(paths_of(body_json(r)), ner["expected"]);
  EXPECT_FALSE(body_json(r).contains("text"));  // unchanged text: not echoed

  // sentiment: the text gets the [CLASSIFY] marker, echoed back since the offsets refer to it.
  const Json& cls = e2e_case("cls_sent");
  const std::string marked = cls["text"].get<std::string>();
  r = post(c, "/v1/extract", Json{{"text", marked.substr(std::string("[CLASSIFY]").size())}, {"task", "sentiment"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(paths_of(body_json(r)), cls["expected"]);
  EXPECT_EQ(body_json(r)["text"], marked);
}

struct BadCase {
  std::string path;
  std::string body;
  int status;
  std::string error_type;
  std::string message_part;
};

TEST(HttpRoutes, BadInputGetsTheRightStatusAndTheServerKeepsServing) {
  ServerConfig config;
  config.max_texts = 4;
  TestServer s(config);
  auto c = s.client();
  const std::vector<BadCase> cases = {
      {"/v1/extract", "{", 400, "invalid_json", "malformed JSON"},
      {"/v1/extract", "", 400, "invalid_json", "malformed JSON"},
      {"/v1/extract", "{\"text\": \"\xff\xfe\", \"schema\": {}}", 400, "invalid_json", "UTF-8"},
      {"/v1/extract", "{\"text\": \"\\udc00\", \"schema\": {}}", 400, "invalid_json", "surrogate"},
      {"/v1/extract", "[1, 2]", 422, "invalid_request", "JSON object"},
      {"/v1/extract", R"({"text": 5, "schema": {}})", 422, "invalid_request", "\"text\" must be a string"},
      {"/v1/extract", R"({"text": "", "schema": {"人物": null}})", 422, "invalid_request", "empty"},
      {"/v1/extract", R"({"text": "张三", "schema": 5})", 422, "invalid_request", "schema"},
      {"/v1/extract", R"({"text": "张三", "schema": "{not json"})", 422, "invalid_request", "schema"},
      {"/v1/extract", R"({"text": "张三", "schema": {"人物": 5}})", 422, "invalid_request", ""},
      {"/v1/extract", R"({"text": "张三"})", 422, "invalid_request", "missing \"schema\""},
      {"/v1/extract", R"({"text": "张三", "task": "nope"})", 422, "invalid_request", "unknown task"},
      {"/v1/extract", R"({"text": "张三", "task": "ner"})", 422, "invalid_request", "labels"},
      {"/v1/extract", R"({"text": "张三", "task": 3})", 422, "invalid_request", "\"task\" must be a string"},
      {"/v1/extract", R"({"text": "张三", "schema": {}, "options": {"bogus": 1}})", 422, "invalid_request", "bogus"},
      {"/v1/extract", R"({"text": "张三", "schema": {}, "options": {"max_len": "x"}})", 422, "invalid_request", "max_len"},
      {"/v1/extract", R"({"text": "张三", "schema": {}, "options": [1]})", 422, "invalid_request", "options"},
      {"/v1/extract", R"({"text": "张三", "texts": ["李四"], "schema": {}})", 422, "invalid_request", "exactly one"},
      {"/v1/extract", R"({"texts": [], "schema": {}})", 422, "invalid_request", "non-empty"},
      {"/v1/extract", R"({"texts": "张三", "schema": {}})", 422, "invalid_request", "non-empty"},
      {"/v1/extract", R"({"texts": ["张三", 3], "schema": {}})", 422, "invalid_request", "texts[1]"},
      {"/v1/extract", R"({"texts": ["张三", ""], "schema": {"人物": null}})", 422, "invalid_request", "texts[1]"},
      {"/v1/extract", R"({"texts": ["a", "b", "c", "d", "e"], "schema": {}})", 422, "invalid_request", "at most 4"},
      {"/v1/extract", R"({"text": "张三", "schmea": {}})", 422, "invalid_request", "unknown field \"schmea\""},
      {"/v1/extract", R"({"text": "张三", "schema": {}, "labels": "x", "task": "ner"})", 422, "invalid_request", "labels"},
      {"/extract", R"({"text": "张三", "schema": {}, "task": "ner"})", 422, "invalid_request", "unknown field"},
      {"/extract", R"({"text": "张三"})", 422, "invalid_request", "{\"text\", \"schema\"}"},
      {"/nope", "{}", 404, "not_found", "no route"},
  };
  for (const BadCase& bad : cases) {
    auto r = post(c, bad.path, bad.body);
    ASSERT_TRUE(r) << bad.body;
    EXPECT_EQ(r->status, bad.status) << bad.body << " -> " << r->body;
    const Json j = body_json(r);
    EXPECT_EQ(j.value("error_type", ""), bad.error_type) << bad.body;
    EXPECT_NE(j.value("error", "").find(bad.message_part), std::string::npos) << bad.body << " -> " << r->body;
  }
  auto get_extract = c.Get("/v1/extract");
  ASSERT_TRUE(get_extract);
  EXPECT_EQ(get_extract->status, 405);
  EXPECT_EQ(get_extract->get_header_value("Allow"), "POST");
  EXPECT_EQ(body_json(get_extract)["error_type"], "method_not_allowed");
  auto post_health = post(c, "/health", std::string("{}"));
  ASSERT_TRUE(post_health);
  EXPECT_EQ(post_health->status, 405);
  auto unknown = c.Get("/nope/../x");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);

  // Random bytes and random JSON-ish garbage: always a 4xx with the error shape, never a crash.
  std::mt19937 rng(7);
  const std::string alphabet = "{}[]\":,0123456789.-+eEtrufalsn \\/u\x01\xff\xe4\xb8\xad textschema";
  for (int i = 0; i < 300; ++i) {
    std::string body(rng() % 64, ' ');
    for (char& ch : body) ch = alphabet[rng() % alphabet.size()];
    if (i % 3 == 0) body = R"({"text": "张三", "schema": )" + body + "}";
    auto r = post(c, "/v1/extract", body);
    ASSERT_TRUE(r) << "no answer to " << body;
    EXPECT_TRUE(r->status == 400 || r->status == 422 || r->status == 200) << r->status << " for " << body;
    if (r->status != 200) {
      EXPECT_TRUE(body_json(r).contains("error_type")) << body;
    }
  }

  // Still serving, with the right answer.
  auto ok = post(c, "/v1/extract", ner_body(kNerCases[0]));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(paths_of(body_json(ok)), e2e_case(kNerCases[0])["expected"]);
}

TEST(HttpRoutes, BodyOverTheLimitIs413) {
  ServerConfig config;
  config.max_body_bytes = 4096;
  TestServer s(config);
  auto c = s.client();
  const std::string big = R"({"text": ")" + std::string(5000, 'a') + R"(", "schema": {}})";
  auto r = post(c, "/v1/extract", big);
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(body_json(r)["error_type"], "body_too_large");
  auto after = s.client().Post("/v1/extract", ner_body(kNerCases[0]).dump(), "application/json");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
}

TEST(HttpRoutes, ApiKeyOnEveryRouteButHealth) {
  ServerConfig config;
  config.api_key = "s3cret";
  TestServer s(config);
  auto c = s.client();
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  for (const char* path : {"/", "/info", "/metrics", "/openapi.json", "/app.js"}) {
    auto r = c.Get(path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401) << path;
    EXPECT_EQ(body_json(r)["error_type"], "unauthorized") << path;
    EXPECT_EQ(r->get_header_value("WWW-Authenticate"), "Bearer");
  }
  auto no_key = post(c, "/v1/extract", ner_body(kNerCases[0]));
  ASSERT_TRUE(no_key);
  EXPECT_EQ(no_key->status, 401);
  auto alias_no_key = post(c, "/extract", ner_body(kNerCases[0]));
  ASSERT_TRUE(alias_no_key);
  EXPECT_EQ(alias_no_key->status, 401);
  c.set_bearer_token_auth("s3cres");
  auto wrong = post(c, "/v1/extract", ner_body(kNerCases[0]));
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  c.set_bearer_token_auth("s3cret");
  auto right = post(c, "/v1/extract", ner_body(kNerCases[0]));
  ASSERT_TRUE(right);
  EXPECT_EQ(right->status, 200);
  auto info = c.Get("/info");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->status, 200);
  EXPECT_EQ(body_json(info)["auth_required"], true);
}

TEST(HttpRoutes, NotLoadedIs503) {
  TestServer s({}, /*load_model=*/false);
  auto c = s.client();
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503);
  EXPECT_EQ(body_json(health)["status"], "loading");
  auto r = post(c, "/v1/extract", ner_body(kNerCases[0]));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(body_json(r)["error_type"], "not_ready");
  auto info = c.Get("/info");
  ASSERT_TRUE(info);
  EXPECT_EQ(body_json(info)["model"]["loaded"], false);

  s.server().set_load_error("config.json: missing");
  health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503);
  EXPECT_EQ(body_json(health)["status"], "failed");
  EXPECT_NE(body_json(health)["error"].get<std::string>().find("config.json: missing"), std::string::npos);

  s.server().set_engine(std::make_unique<Engine>(Engine::load(tiny_model_dir())));
  health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST(HttpRoutes, StoppedBatcherIs503) {
  TestServer s;
  s.server().shutdown_batcher();
  auto c = s.client();
  auto r = post(c, "/v1/extract", ner_body(kNerCases[0]));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(body_json(r)["error_type"], "shutting_down");
}

TEST(HttpRoutes, FullQueueIs429WithRetryAfter) {
  Gate gate;
  ServerConfig config;
  config.batcher.max_queue = 1;
  config.before_batch = gate.hook();
  TestServer s(config);
  gate.close();
  auto c = s.client();
  auto running = std::async(std::launch::async, [&] { auto cl = s.client(); return post(cl, "/v1/extract", ner_body(kNerCases[0])); });
  gate.wait_entered(1);  // the batcher holds the first request
  auto queued = std::async(std::launch::async, [&] { auto cl = s.client(); return post(cl, "/v1/extract", ner_body(kNerCases[1])); });
  wait_for_metric(c, "rexnlu_queue_depth", 1);
  auto refused = post(c, "/v1/extract", ner_body(kNerCases[2]));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 429);
  EXPECT_EQ(refused->get_header_value("Retry-After"), "1");
  EXPECT_EQ(body_json(refused)["error_type"], "queue_full");
  gate.open();
  EXPECT_EQ(running.get()->status, 200);
  EXPECT_EQ(queued.get()->status, 200);
  auto later = post(c, "/v1/extract", ner_body(kNerCases[2]));
  ASSERT_TRUE(later);
  EXPECT_EQ(later->status, 200);
}

TEST(HttpRoutes, DeadlineIs504) {
  Gate gate;
  ServerConfig config;
  config.deadline = 100ms;
  config.before_batch = gate.hook();
  TestServer s(config);
  gate.close();
  auto c = s.client();
  auto r = post(c, "/v1/extract", ner_body(kNerCases[0]));  // held in the batcher past its deadline
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 504);
  EXPECT_EQ(body_json(r)["error_type"], "deadline_exceeded");
  gate.open();
  auto ok = post(c, "/v1/extract", ner_body(kNerCases[0]));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST(HttpRoutes, EngineFailureIs500AndTheServiceGoesOn) {
  std::atomic<int> batches{0};
  ServerConfig config;
  config.before_batch = [&batches] {
    if (batches++ == 0) throw std::runtime_error("injected failure");
  };
  TestServer s(config);
  auto c = s.client();
  auto failed = post(c, "/v1/extract", ner_body(kNerCases[0]));
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->status, 500);
  EXPECT_EQ(body_json(failed)["error_type"], "internal");
  auto ok = post(c, "/v1/extract", ner_body(kNerCases[0]));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(paths_of(body_json(ok)), e2e_case(kNerCases[0])["expected"]);
}

// Out of device memory during a batch (here injected as the error the backends throw) answers
// 503 out_of_memory with Retry-After, and the next request is served.
TEST(HttpRoutes, OutOfMemoryIs503AndTheServiceGoesOn) {
  std::atomic<int> batches{0};
  ServerConfig config;
  config.before_batch = [&batches] {
    if (batches++ == 0) throw Error(ErrorKind::kOutOfMemory, "out of memory: could not allocate 64 MiB more of scratch GPU memory");
  };
  TestServer s(config);
  auto c = s.client();
  auto failed = post(c, "/v1/extract", ner_body(kNerCases[0]));
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->status, 503);
  EXPECT_EQ(failed->get_header_value("Retry-After"), "1");
  const Json e = body_json(failed);
  EXPECT_EQ(e["error_type"], "out_of_memory");
  EXPECT_NE(e["error"].get<std::string>().find("64 MiB more of scratch GPU memory"), std::string::npos) << e;
  auto ok = post(c, "/v1/extract", ner_body(kNerCases[0]));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(paths_of(body_json(ok)), e2e_case(kNerCases[0])["expected"]);
}

// A real allocation failure: the engine's scratch memory capped (LoadOptions::workspace_limit_bytes,
// --workspace-limit-mb) below what a long text needs. The long text gets 503 naming the memory,
// a short one is still answered correctly, and /info lists no GPU on the CPU.
TEST(HttpRoutes, WorkspaceLimitIs503ForTheBigBatchOnly) {
  TestServer s({}, /*load_model=*/false);
  LoadOptions options;
  options.workspace_limit_bytes = size_t{1} << 20;
  s.server().set_engine(std::make_unique<Engine>(Engine::load(tiny_model_dir(), options)));
  auto c = s.client();
  std::string long_text;
  for (int i = 0; i < 40; ++i) long_text += "北大西洋议会春季会议26日在西班牙巴塞罗那闭幕。";
  auto big = post(c, "/v1/extract", Json{{"text", long_text}, {"schema", {{"人物", nullptr}, {"地理位置", nullptr}}}});
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 503) << big->body;
  EXPECT_EQ(body_json(big)["error_type"], "out_of_memory");
  EXPECT_NE(big->body.find("scratch host memory, over the limit of 1 MiB"), std::string::npos) << big->body;
  auto ok = post(c, "/v1/extract", ner_body(kNerCases[0]));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(paths_of(body_json(ok)), e2e_case(kNerCases[0])["expected"]);
  auto info = c.Get("/info");
  ASSERT_TRUE(info);
  EXPECT_EQ(body_json(info)["gpu_memory"], Json::array());
}

TEST(HttpRoutes, ConcurrentRequestsShareOneForwardPerLevel) {
  Gate gate;
  ServerConfig config;
  config.before_batch = gate.hook();
  TestServer s(config);
  gate.close();
  auto c = s.client();
  auto first = std::async(std::launch::async, [&] { auto cl = s.client(); return post(cl, "/v1/extract", ner_body(kNerCases[0])); });
  gate.wait_entered(1);
  std::vector<std::future<httplib::Result>> rest;
  for (int i = 1; i < 4; ++i) {
    rest.push_back(std::async(std::launch::async, [&, i] { auto cl = s.client(); return post(cl, "/v1/extract", ner_body(kNerCases[i])); }));
  }
  wait_for_metric(c, "rexnlu_queue_depth", 3);
  gate.open();
  auto r0 = first.get();
  ASSERT_TRUE(r0);
  EXPECT_EQ(paths_of(body_json(r0)), e2e_case(kNerCases[0])["expected"]);
  for (int i = 1; i < 4; ++i) {
    auto r = rest[static_cast<size_t>(i - 1)].get();
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200);
    EXPECT_EQ(paths_of(body_json(r)), e2e_case(kNerCases[i])["expected"]) << kNerCases[i];
  }
  // Flat NER schemas need one level each: 1 forward for the first batch, 1 for the other three.
  EXPECT_EQ(metric(c, "rexnlu_batches_total"), 2);
  EXPECT_EQ(metric(c, "rexnlu_forward_calls_total"), 2);
  EXPECT_EQ(metric(c, "rexnlu_batch_size_sum"), 4);
}

TEST(HttpRoutes, MetricsCountEveryRequestUnderConcurrency) {
  TestServer s;
  constexpr int kThreads = 8, kEach = 10;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto cl = s.client();
      for (int i = 0; i < kEach; ++i) {
        auto r = post(cl, "/v1/extract", t % 2 ? ner_body(kNerCases[i % 4]) : Json{{"text", "x"}});
        EXPECT_TRUE(r && r->status == (t % 2 ? 200 : 422));
        EXPECT_TRUE(cl.Get("/health"));
      }
    });
  }
  for (auto& t : threads) t.join();
  auto c = s.client();
  // A request is counted right after its response is sent: the last few may still be on their way.
  wait_for_metric(c, "rexnlu_http_requests_total{route=\"/v1/extract\",status=\"200\"}", kThreads / 2 * kEach);
  wait_for_metric(c, "rexnlu_http_requests_total{route=\"/v1/extract\",status=\"422\"}", kThreads / 2 * kEach);
  wait_for_metric(c, "rexnlu_http_requests_total{route=\"/health\",status=\"200\"}", kThreads * kEach);
  wait_for_metric(c, "rexnlu_http_request_duration_seconds_count{route=\"/v1/extract\"}", kThreads * kEach);
  EXPECT_EQ(metric(c, "rexnlu_batch_size_sum"), kThreads / 2 * kEach);  // every valid text ran once
  const int64_t batches = metric(c, "rexnlu_batches_total");
  for (const char* stage : {"tokenize", "forward", "decode"}) {
    EXPECT_EQ(metric(c, std::string("rexnlu_stage_duration_seconds_count{stage=\"") + stage + "\"}"), batches);
  }
  EXPECT_EQ(metric(c, "rexnlu_stage_duration_seconds_count{stage=\"queue\"}"), kThreads / 2 * kEach);
  wait_for_metric(c, "rexnlu_http_requests_in_flight", 1);  // this /metrics request
  EXPECT_EQ(metric(c, "rexnlu_model_loaded"), 1);
  EXPECT_GT(metric(c, "process_resident_memory_bytes"), 0);
}

// A burst of clients connecting while nothing accepts (as when both cores are busy with a batch)
// must all complete the TCP handshake at once. With cpp-httplib's own backlog of 5, all but ~6 of
// them would wait for SYN retransmissions (1, 2, 4... s), which showed up as tens of seconds of
// p99 in the load test.
TEST(HttpServerSocket, ListenBacklogTakesABurstOfConnections) {
  ServerConfig config;
  config.port = 0;
  HttpServer server(config);
  const int port = server.bind();  // listening, but no accept loop yet
  constexpr int kClients = 64;
  std::vector<pollfd> fds;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < kClients; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ASSERT_GE(fd, 0);
    connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);  // EINPROGRESS
    fds.push_back(pollfd{fd, POLLOUT, 0});
  }
  int connected = 0;
  const auto until = std::chrono::steady_clock::now() + 700ms;  // below the first SYN retry (1 s)
  while (std::chrono::steady_clock::now() < until && connected < kClients) {
    poll(fds.data(), fds.size(), 50);
    connected = 0;
    for (const pollfd& p : fds) {
      int err = 1;
      socklen_t len = sizeof err;
      if ((p.revents & POLLOUT) && getsockopt(p.fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) ++connected;
    }
  }
  for (const pollfd& p : fds) close(p.fd);
  EXPECT_EQ(connected, kClients);
}

// A 160 KB body whose schema nests 80,000 arrays killed the server (stack overflow while the schema
// was re-serialized), also as text/plain. JSON deeper than 64 levels is refused before parsing.
TEST(HttpRoutes, DeeplyNestedJsonIs400AndTheServerKeepsServing) {
  TestServer s;
  auto c = s.client();
  const std::string deep = std::string(80000, '[') + std::string(80000, ']');
  for (const std::string& body : {R"({"text": "张三", "schema": {"人物": )" + deep + "}}",
                                  R"({"text": "张三", "schema": {"人物": null}, "options": )" + deep + "}", deep}) {
    for (const char* type : {"application/json", "text/plain"}) {
      auto r = c.Post("/v1/extract", body, type);
      ASSERT_TRUE(r) << "no answer (server crashed?) for " << type;
      EXPECT_EQ(r->status, 400) << r->body;
      EXPECT_EQ(body_json(r).value("error_type", ""), "invalid_json");
      EXPECT_NE(body_json(r).value("error", "").find("nested deeper than the limit of 64"), std::string::npos) << r->body;
    }
  }
  auto ok = post(c, "/v1/extract", ner_body(kNerCases[0]));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(paths_of(body_json(ok)), e2e_case(kNerCases[0])["expected"]);
}

}  // namespace
}  // namespace rexnlu::server::testing
