// GET /openapi.json against the real responses: every response the service gives in these
// scenarios must be documented for its route, method and status, with a matching content type
// and a body that satisfies the documented schema; every documented operation is exercised.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <set>

#include "server/json_schema_check.h"
#include "server/server_test_util.h"

namespace rexnlu::server::testing {
namespace {

using namespace std::chrono_literals;

struct Exchange {
  std::string method, path;
  httplib::Result result;
};

const char* kText = "人事制度改革、分配制度改革、后勤管理改革在1992年下半年全部完成。";

Json ner_body() { return {{"text", kText}, {"schema", {{"人物", nullptr}, {"组织机构", nullptr}}}}; }

Exchange get(httplib::Client& c, const std::string& path) { return {"get", path, c.Get(path.c_str())}; }
Exchange post(httplib::Client& c, const std::string& path, const std::string& body, const httplib::Headers& headers = {}) {
  return {"post", path, c.Post(path.c_str(), headers, body, "application/json")};
}

std::vector<std::string> check_against_document(const Json& doc, const Exchange& x) {
  if (!x.result) return {x.method + " " + x.path + ": no response"};
  const int status = x.result->status;
  const std::string what = x.method + " " + x.path + " " + std::to_string(status);
  const Json* operation = nullptr;
  if (doc["paths"].contains(x.path) && doc["paths"][x.path].contains(x.method)) operation = &doc["paths"][x.path][x.method];
  if (!operation) return {what + ": the route is not documented"};
  const Json& responses = (*operation)["responses"];
  if (!responses.contains(std::to_string(status))) return {what + ": the status is not documented"};
  const Json& response = resolve_ref(doc, responses[std::to_string(status)]);
  const std::string content_type = x.result->get_header_value("Content-Type");
  const std::string mime = content_type.substr(0, content_type.find(';'));
  if (!response["content"].contains(mime)) return {what + ": content type " + mime + " is not documented"};
  if (response.contains("headers")) {
    for (auto it = response["headers"].begin(); it != response["headers"].end(); ++it) {
      if (!x.result->has_header(it.key().c_str())) return {what + ": header " + it.key() + " missing"};
    }
  }
  if (mime != "application/json") return {};
  Json body;
  try {
    body = Json::parse(x.result->body);
  } catch (const Json::exception&) {
    return {what + ": the body is not JSON"};
  }
  std::vector<std::string> errors = schema_violations(body, response["content"][mime]["schema"], doc);
  for (auto& e : errors) e = what + ": " + e;
  return errors;
}

TEST(OpenApi, TheCheckerRejectsWhatTheDocumentForbids) {
  TestServer s;
  auto c = s.client();
  const Json doc = body_json(c.Get("/openapi.json"));
  const Json result_schema = {{"$ref", "#/components/schemas/Result"}};
  EXPECT_TRUE(schema_violations(Json::parse(R"({"output": [[{"type": "a", "span": "b", "offset": [0, 1]}]]})"), result_schema, doc).empty());
  EXPECT_FALSE(schema_violations(Json::parse(R"({"output": 3})"), result_schema, doc).empty());
  EXPECT_FALSE(schema_violations(Json::parse(R"({"output": [[{"type": "a", "offset": [0, 1]}]]})"), result_schema, doc).empty());
  EXPECT_FALSE(schema_violations(Json::parse(R"({"output": [[{"type": "a", "span": "b", "offset": [0]}]]})"), result_schema, doc).empty());
  const Json error_schema = {{"$ref", "#/components/schemas/Error"}};
  EXPECT_FALSE(schema_violations(Json::parse(R"({"error": "x", "error_type": "bogus"})"), error_schema, doc).empty());
}

TEST(OpenApi, DocumentMatchesRealResponses) {
  std::vector<Exchange> exchanges;
  Json doc;
  {
    ServerConfig config;
    config.max_body_bytes = 8192;
    TestServer s(config);
    auto c = s.client();
    doc = body_json(c.Get("/openapi.json"));
    for (const char* path : {"/", "/health", "/info", "/metrics", "/openapi.json"}) exchanges.push_back(get(c, path));
    exchanges.push_back(post(c, "/v1/extract", ner_body().dump()));
    exchanges.push_back(post(c, "/v1/extract", Json{{"texts", {kText, "北京"}}, {"schema", {{"人物", nullptr}}}}.dump()));
    exchanges.push_back(post(c, "/v1/extract", Json{{"text", "这本书很好看"}, {"task", "sentiment"}, {"options", {{"probabilities", false}}}}.dump()));
    exchanges.push_back(post(c, "/v1/extract", "{"));
    exchanges.push_back(post(c, "/v1/extract", R"({"text": ""})"));
    exchanges.push_back(post(c, "/v1/extract", std::string(9000, ' ')));
    exchanges.push_back(get(c, "/v1/extract"));
    exchanges.push_back(post(c, "/extract", ner_body().dump()));
    exchanges.push_back(post(c, "/extract", R"({"text": 1, "schema": {}})"));
    exchanges.push_back(post(c, "/extract", "[1,"));
    exchanges.push_back(post(c, "/extract", std::string(9000, ' ')));
    exchanges.push_back(get(c, "/extract"));
    for (const char* path : {"/v1/extract", "/extract"}) {
      exchanges.push_back(post(c, path, ner_body().dump(), {{"Origin", "http://elsewhere.example"}}));
      exchanges.push_back(post(c, path, ner_body().dump(), {{"Content-Encoding", "gzip"}}));
    }
  }
  {
    ServerConfig config;
    config.api_key = "k";
    TestServer s(config);
    auto c = s.client();
    for (const char* path : {"/", "/info", "/metrics", "/openapi.json"}) exchanges.push_back(get(c, path));
    exchanges.push_back(post(c, "/v1/extract", ner_body().dump()));
    exchanges.push_back(post(c, "/extract", ner_body().dump()));
  }
  {
    TestServer s({}, /*load_model=*/false);
    auto c = s.client();
    exchanges.push_back(get(c, "/health"));
    exchanges.push_back(post(c, "/v1/extract", ner_body().dump()));
    exchanges.push_back(post(c, "/extract", ner_body().dump()));
  }
  {
    // 429 and 504: the batcher is held on its first request (which then passes its deadline).
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    std::atomic<int> entered{0};
    ServerConfig config;
    config.batcher.max_queue = 1;
    config.deadline = 1500ms;
    config.before_batch = [released, &entered] {
      ++entered;
      released.wait();
    };
    TestServer s(config);
    auto c = s.client();
    auto held = std::async(std::launch::async, [&] { auto cl = s.client(); return post(cl, "/v1/extract", ner_body().dump()); });
    while (entered.load() == 0) std::this_thread::sleep_for(1ms);
    auto queued = std::async(std::launch::async, [&] { auto cl = s.client(); return post(cl, "/extract", ner_body().dump()); });
    for (int i = 0; i < 2000; ++i) {
      auto m = c.Get("/metrics");
      if (m && m->body.find("\nrexnlu_queue_depth 1\n") != std::string::npos) break;
      std::this_thread::sleep_for(1ms);
    }
    exchanges.push_back(post(c, "/v1/extract", ner_body().dump()));  // 429
    exchanges.push_back(post(c, "/extract", ner_body().dump()));     // 429
    exchanges.push_back(held.get());                                  // 504
    exchanges.push_back(queued.get());                                // 504
    release.set_value();
  }

  {
    // 500: the engine throws (injected) on every batch.
    std::atomic<int> batches{0};
    ServerConfig config;
    config.before_batch = [&batches] { throw std::runtime_error("injected failure " + std::to_string(batches++)); };
    TestServer s(config);
    auto c = s.client();
    exchanges.push_back(post(c, "/v1/extract", ner_body().dump()));
    exchanges.push_back(post(c, "/extract", ner_body().dump()));
  }

  std::set<std::string> seen;
  for (const Exchange& x : exchanges) {
    for (const std::string& e : check_against_document(doc, x)) ADD_FAILURE() << e;
    if (x.result) seen.insert(x.method + " " + x.path + " " + std::to_string(x.result->status));
  }
  // Every documented status was seen for real.
  for (auto p = doc["paths"].begin(); p != doc["paths"].end(); ++p) {
    for (auto op = p.value().begin(); op != p.value().end(); ++op) {
      for (auto st = op.value()["responses"].begin(); st != op.value()["responses"].end(); ++st) {
        EXPECT_TRUE(seen.count(op.key() + " " + p.key() + " " + st.key())) << "never seen: " << op.key() << " " << p.key() << " " << st.key();
      }
    }
  }
}

}  // namespace
}  // namespace rexnlu::server::testing
