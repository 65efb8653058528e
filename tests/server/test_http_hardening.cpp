// Issue 12 items 2, 4, 5, 6 and 8 against a real server on 127.0.0.1, with raw sockets where
// httplib::Client cannot send the bytes: decoded-body and header limits, slow clients and the
// connection cap, keep-alive latency, pipelining, 405 + Allow, protocol errors, Host/Origin
// checks, the access log and /health on a wedged engine. Each test failed on the cpp-httplib
// server this replaced.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <future>
#include <mutex>

#include "server/raw_http_client.h"
#include "server/server_test_util.h"

namespace rexnlu::server::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const std::string kBody = R"({"text": "张三在北京工作", "schema": {"人物": null}})";
const std::string kHealth = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

std::string error_type(const RawResponse& r) {
  try {
    return Json::parse(r.body).value("error_type", "");
  } catch (const Json::exception&) {
    return "(not JSON: " + r.body.substr(0, 80) + ")";
  }
}

// The service still answers a fresh client.
void expect_serving(int port) {
  RawClient c(port);
  ASSERT_TRUE(c.send(post_request("/v1/extract", kBody)));
  const RawResponse r = c.read();
  EXPECT_EQ(r.status, 200) << r.body;
}

TEST(HttpHardening, CompressedBodyIs415NotInflated) {
  TestServer s;
  RawClient c(s.port());
  ASSERT_TRUE(c.send(post_request("/v1/extract", std::string("\x1f\x8b\x08\x00", 4) + std::string(60, 'x'), "Content-Encoding: gzip\r\n")));
  const RawResponse r = c.read();
  EXPECT_EQ(r.status, 415) << r.body;
  EXPECT_EQ(error_type(r), "unsupported_encoding");
  // identity is no coding at all.
  RawClient ok(s.port());
  ASSERT_TRUE(ok.send(post_request("/v1/extract", kBody, "Content-Encoding: identity\r\n")));
  EXPECT_EQ(ok.read().status, 200);
  expect_serving(s.port());
}

TEST(HttpHardening, ChunkedBodyOverTheLimitIs413) {
  ServerConfig config;
  config.max_body_bytes = 4096;
  TestServer s(config);
  RawClient c(s.port());
  std::string req = "POST /v1/extract HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 8; ++i) req += "400\r\n" + std::string(1024, ' ') + "\r\n";  // 8 KB in 1 KB chunks
  req += "0\r\n\r\n";
  c.send(req);  // the server may close before all of it is sent
  const RawResponse r = c.read();
  EXPECT_EQ(r.status, 413) << r.body;
  EXPECT_EQ(error_type(r), "body_too_large");
  // A chunked body under the limit is decoded and served.
  RawClient ok(s.port());
  const std::string small = "POST /v1/extract HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n" +
                            (std::stringstream() << std::hex << kBody.size()).str() + "\r\n" + kBody + "\r\n0\r\n\r\n";
  ASSERT_TRUE(ok.send(small));
  EXPECT_EQ(ok.read().status, 200);
}

TEST(HttpHardening, HeaderFloodIs431) {
  TestServer s;
  {
    RawClient c(s.port());
    std::string req = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    for (int i = 0; i < 500; ++i) req += "X-" + std::to_string(i) + ": y\r\n";  // ~5 KB, 500 fields
    c.send(req + "\r\n");
    const RawResponse r = c.read();
    EXPECT_EQ(r.status, 431) << r.body;
    EXPECT_EQ(error_type(r), "headers_too_large");
  }
  {
    RawClient c(s.port());
    c.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + std::string(1 << 20, 'a') + "\r\n\r\n");
    const RawResponse r = c.read();
    EXPECT_EQ(r.status, 431) << r.body;
  }
  expect_serving(s.port());
}

TEST(HttpHardening, SlowClientsDoNotStarveOthers) {
  ServerConfig config;  // 64 handler threads, as in the service
  TestServer s(config);
  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < 70; ++i) {
    slow.push_back(std::make_unique<RawClient>(s.port()));
    ASSERT_TRUE(slow.back()->send("P"));
  }
  std::this_thread::sleep_for(300ms);
  for (auto& c : slow) c->send("O");  // still trickling
  const auto t0 = Clock::now();
  RawClient health(s.port());
  ASSERT_TRUE(health.send(kHealth));
  EXPECT_EQ(health.read(2000ms).status, 200);
  RawClient extract(s.port());
  ASSERT_TRUE(extract.send(post_request("/v1/extract", kBody)));
  EXPECT_EQ(extract.read(5000ms).status, 200);
  EXPECT_LT(Clock::now() - t0, 5s);
}

TEST(HttpHardening, RequestThatDoesNotArriveInTimeIs408) {
  ServerConfig config;
  config.read_timeout = 300ms;
  TestServer s(config);
  RawClient c(s.port());
  ASSERT_TRUE(c.send("POST /v1/extract HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{\"te"));
  const auto t0 = Clock::now();
  const RawResponse r = c.read(3000ms);
  EXPECT_EQ(r.status, 408) << r.body;
  EXPECT_EQ(error_type(r), "request_timeout");
  EXPECT_LT(Clock::now() - t0, 2s);
  EXPECT_TRUE(c.closed_by_server(3000ms));
}

// SIGTERM drains: a request still arriving gets 2 s (then 408), not the whole read timeout.
TEST(HttpHardening, StopDoesNotWaitForARequestStillArriving) {
  ServerConfig config;
  config.read_timeout = 60s;
  auto s = std::make_unique<TestServer>(config);
  RawClient c(s->port());
  ASSERT_TRUE(c.send("POST /v1/extract HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{"));
  std::this_thread::sleep_for(100ms);
  const auto t0 = Clock::now();
  s.reset();  // stop(), then wait for listen() to return
  EXPECT_LT(Clock::now() - t0, 6s);
  EXPECT_EQ(c.read(1000ms).status, 408);
}

TEST(HttpHardening, IdleKeepAliveConnectionsAreClosed) {
  ServerConfig config;
  config.idle_timeout = 200ms;
  TestServer s(config);
  RawClient c(s.port());
  ASSERT_TRUE(c.send(kHealth));
  EXPECT_EQ(c.read().status, 200);
  EXPECT_TRUE(c.closed_by_server(2000ms));
}

// Opens `count` connections that each sent half a request line (so the server holds them open),
// checks that one more is answered 503 too_many_connections and returns that answer's body with
// the held connections.
std::string hold_until_refused(const TestServer& s, int count, std::vector<std::unique_ptr<RawClient>>& held) {
  for (int i = 0; i < count; ++i) {
    held.push_back(std::make_unique<RawClient>(s.port()));
    EXPECT_TRUE(held.back()->send("GET /hea"));
  }
  std::this_thread::sleep_for(200ms);  // all accepted
  RawClient extra(s.port());
  const RawResponse r = extra.read(2000ms);
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(error_type(r), "too_many_connections");
  return r.body;
}

// One held connection leaves: its slot is free again.
void expect_slot_freed(const TestServer& s, std::vector<std::unique_ptr<RawClient>>& held) {
  held.pop_back();
  std::this_thread::sleep_for(200ms);
  RawClient next(s.port());
  ASSERT_TRUE(next.send(kHealth));
  EXPECT_EQ(next.read().status, 200);
}

TEST(HttpHardening, ConnectionCapAnswers503AndFreesSlots) {
  ServerConfig config;
  config.max_connections = 4;
  TestServer s(config);
  std::vector<std::unique_ptr<RawClient>> held;
  hold_until_refused(s, 4, held);
  expect_slot_freed(s, held);
}

TEST(HttpHardening, ConnectionsPerAddressAreCappedWhenAsked) {
  ServerConfig config;
  config.max_connections_per_ip = 2;
  TestServer s(config);
  std::vector<std::unique_ptr<RawClient>> held;
  const std::string refusal = hold_until_refused(s, 2, held);
  EXPECT_NE(refusal.find("from 127.0.0.1 (2)"), std::string::npos) << refusal;
  RawClient other(s.port(), "127.0.0.2");  // another address has its own count
  ASSERT_TRUE(other.connected());
  ASSERT_TRUE(other.send(kHealth));
  EXPECT_EQ(other.read().status, 200);
  expect_slot_freed(s, held);
}

// Nagle + delayed ACK added ~40 ms to every response after the first on a connection when the
// header and body went out in two writes.
TEST(HttpHardening, KeepAliveResponsesAreNotDelayed) {
  TestServer s;
  RawClient c(s.port());
  std::vector<double> ms;
  for (int i = 0; i < 20; ++i) {
    const auto t0 = Clock::now();
    ASSERT_TRUE(c.send(i % 2 ? kHealth : post_request("/v1/extract", R"({"text": "", "schema": {}})")));
    const RawResponse r = c.read();
    ASSERT_NE(r.status, 0) << "request " << i;
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin() + 1, ms.end());
  EXPECT_LT(ms[10], 20.0) << "median of requests 2-20 in ms";
}

TEST(HttpHardening, PipelinedRequestsAreAnsweredInOrder) {
  TestServer s;
  RawClient c(s.port());
  ASSERT_TRUE(c.send(post_request("/v1/extract", kBody) + "GET /info HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" +
                     post_request("/v1/extract", "{") + kHealth));
  const RawResponse first = c.read();
  EXPECT_EQ(first.status, 200);
  EXPECT_TRUE(Json::parse(first.body).contains("output")) << first.body;
  const RawResponse second = c.read();
  EXPECT_EQ(second.status, 200);
  EXPECT_TRUE(Json::parse(second.body).contains("limits")) << second.body;
  const RawResponse third = c.read();
  EXPECT_EQ(third.status, 400);
  EXPECT_EQ(error_type(third), "invalid_json");
  const RawResponse fourth = c.read();
  EXPECT_EQ(fourth.status, 200);
  EXPECT_EQ(fourth.body, R"({"status":"ok"})");
}

// curl -d sends application/x-www-form-urlencoded; cpp-httplib parsed such bodies as a form and
// refused them above 8 KB.
TEST(HttpHardening, AnyContentTypeUpToTheBodyLimit) {
  TestServer s;
  std::string text;
  while (text.size() < 30000) text += "张三在北京工作。";
  // The body is read and parsed as JSON whatever its type says: the answer is about its schema
  // (a 422 that costs no model time), not its size.
  const std::string body = Json{{"text", text}, {"schema", 5}}.dump();
  RawClient c(s.port());
  ASSERT_TRUE(c.send(post_request("/v1/extract", body, "", "application/x-www-form-urlencoded")));
  const RawResponse r = c.read(60s);
  EXPECT_EQ(r.status, 422) << r.body.substr(0, 200);
  EXPECT_EQ(error_type(r), "invalid_request");
  // And a small form-typed body is served.
  ASSERT_TRUE(c.send(post_request("/v1/extract", kBody, "", "application/x-www-form-urlencoded")));
  EXPECT_EQ(c.read(60s).status, 200);
}

TEST(HttpHardening, ExpectContinueGetsA100) {
  TestServer s;
  RawClient c(s.port());
  ASSERT_TRUE(c.send("POST /v1/extract HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\nContent-Length: " +
                     std::to_string(kBody.size()) + "\r\n\r\n"));
  EXPECT_EQ(c.read(2000ms).status, 100);
  ASSERT_TRUE(c.send(kBody));
  EXPECT_EQ(c.read().status, 200);
}

TEST(HttpHardening, WrongMethodOnAKnownRouteIs405WithAllow) {
  TestServer s;
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"PUT", "/v1/extract", "POST"}, {"DELETE", "/extract", "POST"}, {"GET", "/v1/extract", "POST"},
      {"POST", "/health", "GET, HEAD"}, {"PATCH", "/", "GET, HEAD"}, {"DELETE", "/metrics", "GET, HEAD"}};
  for (const auto& [method, path, allow] : cases) {
    RawClient c(s.port());
    ASSERT_TRUE(c.send(method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n"));
    const RawResponse r = c.read();
    EXPECT_EQ(r.status, 405) << method << " " << path;
    EXPECT_EQ(r.header("allow"), allow) << method << " " << path;
    EXPECT_EQ(error_type(r), "method_not_allowed");
  }
  RawClient head(s.port());
  ASSERT_TRUE(head.send("HEAD /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  const RawResponse r = head.read(10s, /*no_body=*/true);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("content-length"), "15");  // of the body a GET gets
  ASSERT_TRUE(head.send(kHealth));  // nothing was sent after the head: the next response follows directly
  EXPECT_EQ(head.read().body, R"({"status":"ok"})");
}

TEST(HttpHardening, ProtocolErrorsAreNamedAsSuch) {
  TestServer s;
  const std::vector<std::string> bad = {
      "HELLO THERE\r\n\r\n",
      "GET /health HTTP/9.x\r\n\r\n",
      "GET health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
      "POST /v1/extract HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
      "POST /v1/extract HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 12abc\r\n\r\n{}",
      "GET /health HTTP/1.1\r\nBad Header\r\n\r\n",
  };
  for (const std::string& req : bad) {
    RawClient c(s.port());
    ASSERT_TRUE(c.send(req));
    const RawResponse r = c.read();
    EXPECT_EQ(r.status, 400) << req;
    EXPECT_EQ(error_type(r), "invalid_http") << req;
    EXPECT_NE(Json::parse(r.body).value("error", "").find("HTTP"), std::string::npos) << r.body;
    EXPECT_TRUE(c.closed_by_server(3000ms)) << req;
  }
  expect_serving(s.port());
}

TEST(HttpHardening, ForeignHostAndOriginAreRefusedWithoutAnApiKey) {
  ServerConfig config;
  config.allowed_origins = {"http://app.example:3000"};
  config.allowed_hosts = {"nlu.internal"};
  TestServer s(config);
  auto ask = [&](const std::string& headers, const std::string& content_type = "application/json") {
    RawClient c(s.port());
    c.send("POST /v1/extract HTTP/1.1\r\n" + headers + "Content-Type: " + content_type +
           "\r\nContent-Length: " + std::to_string(kBody.size()) + "\r\n\r\n" + kBody);
    return c.read();
  };
  const std::string port = std::to_string(s.port());
  // DNS rebinding: a foreign name that resolves to 127.0.0.1.
  RawResponse r = ask("Host: evil.example:" + port + "\r\n");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(error_type(r), "forbidden_host");
  // A cross-site form post (text/plain needs no preflight).
  r = ask("Host: 127.0.0.1:" + port + "\r\nOrigin: http://evil.example\r\n", "text/plain");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(error_type(r), "forbidden_origin");
  r = ask("Host: 127.0.0.1:" + port + "\r\nOrigin: null\r\n", "text/plain");
  EXPECT_EQ(r.status, 403);
  // The service's own page (same origin), loopback names, the allowed names.
  EXPECT_EQ(ask("Host: 127.0.0.1:" + port + "\r\nOrigin: http://127.0.0.1:" + port + "\r\n").status, 200);
  EXPECT_EQ(ask("Host: localhost:" + port + "\r\nOrigin: http://localhost:" + port + "\r\n").status, 200);
  EXPECT_EQ(ask("Host: [::1]:" + port + "\r\n").status, 200);
  EXPECT_EQ(ask("Host: nlu.internal\r\n").status, 200);
  r = ask("Host: 127.0.0.1:" + port + "\r\nOrigin: http://app.example:3000\r\n");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("access-control-allow-origin"), "http://app.example:3000");
  // Its preflight.
  RawClient pre(s.port());
  pre.send("OPTIONS /v1/extract HTTP/1.1\r\nHost: 127.0.0.1:" + port +
           "\r\nOrigin: http://app.example:3000\r\nAccess-Control-Request-Method: POST\r\n\r\n");
  r = pre.read();
  EXPECT_EQ(r.status, 204);
  EXPECT_EQ(r.header("access-control-allow-methods"), "POST");
  // /health is checked too: a rebinding page must not probe it either.
  RawClient health(s.port());
  health.send("GET /health HTTP/1.1\r\nHost: evil.example\r\n\r\n");
  EXPECT_EQ(health.read().status, 403);
}

TEST(HttpHardening, WithAnApiKeyTheKeyDecides) {
  ServerConfig config;
  config.api_key = "k";
  TestServer s(config);
  RawClient c(s.port());
  c.send(post_request("/v1/extract", kBody, "Authorization: Bearer k\r\nOrigin: http://elsewhere.example\r\n"));
  EXPECT_EQ(c.read().status, 200);
}

struct LogLines {
  std::mutex mutex;
  std::vector<std::string> lines;
  std::function<void(std::string_view)> sink() {
    return [this](std::string_view line) {
      std::lock_guard lock(mutex);
      lines.emplace_back(line);
    };
  }
  std::vector<std::string> wait_for(size_t n) {
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard lock(mutex);
        if (lines.size() >= n) return lines;
      }
      std::this_thread::sleep_for(10ms);
    }
    std::lock_guard lock(mutex);
    return lines;
  }
};

TEST(HttpHardening, AccessLogHasOneLinePerRequestAndNeverTheText) {
  LogLines log;
  ServerConfig config;
  config.log = log.sink();
  TestServer s(config);
  RawClient c(s.port());
  c.send(post_request("/v1/extract", kBody));
  EXPECT_EQ(c.read().status, 200);
  c.send(post_request("/v1/extract", R"({"text": "秘密文本", "schema": 5})"));
  EXPECT_EQ(c.read().status, 422);
  c.send("GET /nope?secret=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(c.read().status, 404);
  const auto lines = log.wait_for(3);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[0].find("POST /v1/extract 200 "), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("in=" + std::to_string(kBody.size())), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("POST /v1/extract 422 "), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("error=invalid_request"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("GET other 404 "), std::string::npos) << lines[2];
  for (const std::string& line : lines) {
    EXPECT_EQ(line.find("张三"), std::string::npos) << line;
    EXPECT_EQ(line.find("秘密"), std::string::npos) << line;
    EXPECT_EQ(line.find("secret"), std::string::npos) << line;
  }
}

TEST(HttpHardening, A500LeavesALineWithTheAccessLogOff) {
  LogLines log;
  std::atomic<int> batches{0};
  ServerConfig config;
  config.access_log = false;
  config.log = log.sink();
  config.before_batch = [&batches] {
    if (batches++ == 0) throw std::runtime_error("injected failure");
  };
  TestServer s(config);
  RawClient c(s.port());
  c.send(post_request("/v1/extract", kBody));
  EXPECT_EQ(c.read().status, 500);
  c.send(post_request("/v1/extract", kBody));
  EXPECT_EQ(c.read().status, 200);
  const auto lines = log.wait_for(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("error: 500 on POST /v1/extract: internal error while running the batch"), std::string::npos)
      << lines[0];
}

TEST(HttpHardening, HealthReportsAWedgedEngine) {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = false;
  ServerConfig config;
  config.stall_limit = 200ms;
  config.before_batch = [&] {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return open; });
  };
  TestServer s(config);
  auto c = s.client();
  EXPECT_EQ(c.Get("/health")->status, 200);
  auto stuck = std::async(std::launch::async, [&] { auto cl = s.client(); return cl.Post("/v1/extract", kBody, "application/json"); });
  std::this_thread::sleep_for(500ms);
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503);
  EXPECT_EQ(body_json(health)["status"], "wedged");
  EXPECT_EQ(body_json(health)["error_type"], "wedged");
  {
    std::lock_guard lock(mutex);
    open = true;
  }
  changed.notify_all();
  EXPECT_EQ(stuck.get()->status, 200);
  EXPECT_EQ(c.Get("/health")->status, 200);
}

}  // namespace
}  // namespace rexnlu::server::testing
