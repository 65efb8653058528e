// Bounds on one request's work (issue 12, item 3) over a fake model: options out of range are
// errors (not clamped), the text and schema limits, a permissive threshold stopped by the paths
// and output limits, max_sequences, the deadline and cancellation between model calls, and the
// cost estimate that the HTTP batcher counts.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "engine/engine_impl.h"
#include "engine/options_json.h"
#include "rexnlu/json.h"
#include "fixtures.h"
#include "models/rex/rex_family.h"

namespace rexnlu {
namespace {

using uie::testing::FakeLinkModel;
using uie::testing::link_first_token;
using namespace std::chrono_literals;

// Every link of every window at logit 0: only a threshold below 0 makes them hold.
models::LinkLogits all_zero(const models::SequenceInput& s) {
  return models::LinkLogits(static_cast<size_t>(s.length()) * s.length(), 0.0f);
}

struct Fake {
  FakeLinkModel* model = nullptr;
  Engine engine;
};

Fake fake_engine(FakeLinkModel::Fill fill) {
  auto model = std::make_unique<FakeLinkModel>(std::move(fill));
  FakeLinkModel* raw = model.get();
  Engine engine(std::make_unique<Engine::Impl>(Engine::Impl{
      text::Tokenizer::from_model_dir(uie::testing::model_dir(), models::rex::added_tokens()), std::move(model), {}}));
  return Fake{raw, std::move(engine)};
}

const char* const kThreeLevels = R"j({"人物": {"组织机构": {"地点": null}}})j";

// The error of a request that must fail: its kind and message.
Error error_of(Engine& engine, const std::string& text, const std::string& schema, const Options& o = {}) {
  try {
    engine.extract(text, schema, o);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error";
  return Error(ErrorKind::kInternal, "no error");
}

void expect_error(const Error& e, ErrorKind kind, std::initializer_list<const char*> fragments) {
  EXPECT_EQ(e.kind(), kind) << e.what();
  for (const char* f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what() << " lacks " << f;
}

TEST(Limits, OptionsOutOfRangeAreErrorsNamingTheValue) {
  using Json = nlohmann::ordered_json;
  auto json_error = [](const char* options) {
    try {
      options_from_json(Json::parse(options));
    } catch (const Error& e) {
      return e;
    }
    ADD_FAILURE() << "no error for " << options;
    return Error(ErrorKind::kInternal, "no error");
  };
  expect_error(json_error(R"({"link_threshold": -1e9})"), ErrorKind::kInvalidInput, {"link_threshold", "[-20, 20]", "-1000000000"});
  expect_error(json_error(R"({"link_threshold": 21})"), ErrorKind::kInvalidInput, {"link_threshold", "21"});
  // The value the user gave, not a clamped one.
  expect_error(json_error(R"({"max_len": 10000000000})"), ErrorKind::kInvalidInput, {"max_len", "10000000000"});
  expect_error(json_error(R"({"stride": -1})"), ErrorKind::kInvalidInput, {"stride", "-1"});
  expect_error(json_error(R"({"hint_max_len": 600})"), ErrorKind::kInvalidInput, {"hint_max_len", "600"});
  expect_error(json_error(R"({"max_batch_cells": 1000000000000})"), ErrorKind::kInvalidInput, {"max_batch_cells", "1000000000000"});
  EXPECT_EQ(options_from_json(Json::parse(R"({"link_threshold": -20, "stride": 0})")).link_threshold, -20.0f);

  // The same checks for C++ callers, whatever way the options came.
  Fake f = fake_engine(link_first_token);
  Options o;
  o.link_threshold = -1e9f;
  expect_error(error_of(f.engine, "北京", R"j({"人物": null})j", o), ErrorKind::kInvalidInput, {"link_threshold"});
  o.link_threshold = std::numeric_limits<float>::quiet_NaN();
  expect_error(error_of(f.engine, "北京", R"j({"人物": null})j", o), ErrorKind::kInvalidInput, {"link_threshold"});
  // Ranges that depend on other options are checked on the final options.
  o = options_from_json(Json::parse(R"({"max_len": 64, "hint_max_len": 32, "stride": 64})"));
  expect_error(error_of(f.engine, "北京", R"j({"人物": null})j", o), ErrorKind::kInvalidInput, {"stride", "64"});
  o = options_from_json(Json::parse(R"({"max_len": 64})"));
  expect_error(error_of(f.engine, "北京", R"j({"人物": null})j", o), ErrorKind::kInvalidInput, {"hint_max_len", "256"});
  o = {};
  o.max_batch_cells = 0;
  expect_error(error_of(f.engine, "北京", R"j({"人物": null})j", o), ErrorKind::kInvalidInput, {"max_batch_cells"});
  EXPECT_EQ(f.model->forward_calls(), 0);
  EXPECT_TRUE(f.engine.extract("北京", R"j({"人物": null})j").ok());
}

TEST(Limits, TextAndSchemaSizeNameTheLimitAndTheValue) {
  Fake f = fake_engine(link_first_token);
  Limits limits;
  limits.max_text_bytes = 30;
  limits.max_schema_types = 3;
  limits.max_schema_depth = 2;
  f.engine.set_limits(limits);
  expect_error(error_of(f.engine, std::string(31, 'a'), R"j({"人物": null})j"), ErrorKind::kLimitExceeded,
               {"31 bytes", "max_text_bytes is 30"});
  expect_error(error_of(f.engine, "北京", R"j({"a": null, "b": {"c": null, "d": null}})j"), ErrorKind::kLimitExceeded,
               {"4 type names", "max_schema_types is 3"});
  expect_error(error_of(f.engine, "北京", kThreeLevels), ErrorKind::kLimitExceeded, {"3 levels", "max_schema_depth is 2"});
  EXPECT_EQ(f.model->forward_calls(), 0);
  EXPECT_TRUE(f.engine.extract(std::string(30, 'a'), R"j({"a": {"b": null}})j").ok());
  // The default limits, and their own range check.
  EXPECT_EQ(Limits{}.max_text_bytes, 100000);
  limits.max_paths = 0;
  EXPECT_THROW(f.engine.set_limits(limits), Error);
  limits = {};
  limits.max_schema_depth = 9;
  EXPECT_THROW(f.engine.set_limits(limits), Error);
}

TEST(Limits, PermissiveThresholdStopsAtTheLimitsInsteadOfExploding) {
  // Every link holds at threshold -20: each level finds every span of the text for every type,
  // and each becomes a prefix of the next level (the issue's 128-byte request -> 56 MB response).
  Fake f = fake_engine(all_zero);
  Options o;
  o.link_threshold = -20.0f;
  const std::string text = "一二三四五六七八九十一二三四五六七八九十";  // 20 characters
  const auto start = std::chrono::steady_clock::now();
  std::vector<Result> r = f.engine.extract_batch({Request{text, kThreeLevels, o}, Request{"北京", R"j({"人物": null})j", {}}});
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
  ASSERT_FALSE(r[0].ok());
  EXPECT_EQ(r[0].error_kind, ErrorKind::kLimitExceeded);
  EXPECT_NE(r[0].error.find("max_paths is 10000"), std::string::npos) << r[0].error;
  EXPECT_TRUE(r[1].ok()) << r[1].error;  // the other request of the batch is unaffected

  // The output bytes bound the same way (long spans make bytes run out before paths).
  Limits limits;
  limits.max_output_bytes = 2000;
  f.engine.set_limits(limits);
  r = f.engine.extract_batch({Request{text, R"j({"人物": null})j", o}});
  ASSERT_FALSE(r[0].ok());
  EXPECT_EQ(r[0].error_kind, ErrorKind::kLimitExceeded);
  EXPECT_NE(r[0].error.find("max_output_bytes is 2000"), std::string::npos) << r[0].error;
}

TEST(Limits, SequencesPerTextAreBounded) {
  Fake f = fake_engine(uie::testing::no_links);
  Limits limits;
  limits.max_sequences = 3;
  f.engine.set_limits(limits);
  std::string text;
  while (text.size() < 3000) text += "小明在北京大学读书，后来去了上海交通大学任教。";  // 1000 characters: 3 windows
  Options o;
  o.max_len = 256;  // 5 windows of ~240 tokens
  o.hint_max_len = 64;
  const Error e = error_of(f.engine, text, R"j({"人物": null})j", o);
  expect_error(e, ErrorKind::kLimitExceeded, {"more than 3 model sequences", "max_sequences is 3"});
  EXPECT_LE(f.model->sequences(), 3);
}

TEST(Limits, ADeadlinePassingMidwayCancelsTheRequestBetweenModelCalls) {
  // Each forward takes 100 ms; the deadline passes during the first of the three levels.
  Fake f = fake_engine([](const models::SequenceInput& s) {
    std::this_thread::sleep_for(100ms);
    return link_first_token(s);
  });
  Request late{"北京大学", kThreeLevels, {}};
  late.deadline = std::chrono::steady_clock::now() + 50ms;
  std::vector<Result> r = f.engine.extract_batch({late});
  ASSERT_FALSE(r[0].ok());
  EXPECT_EQ(r[0].error_kind, ErrorKind::kCancelled);
  EXPECT_NE(r[0].error.find("deadline"), std::string::npos) << r[0].error;
  EXPECT_EQ(f.model->forward_calls(), 1);

  // Without a deadline the same request runs all three levels.
  EXPECT_TRUE(f.engine.extract("北京大学", kThreeLevels).ok());
  EXPECT_EQ(f.model->forward_calls(), 4);

  // A caller's cancel check (the service draining) stops every request in the batch.
  const int64_t before = f.model->forward_calls();
  r = f.engine.extract_batch({Request{"北京大学", kThreeLevels, {}}, Request{"上海", kThreeLevels, {}}}, nullptr,
                             [&] { return f.model->forward_calls() > before; });
  for (const Result& x : r) EXPECT_EQ(x.error_kind, ErrorKind::kCancelled) << x.error;
  EXPECT_EQ(f.model->forward_calls(), before + 1);
}

// A model whose forward has 10 "layers" of 30 ms and asks between them whether to stop, as the
// real encoder does.
class LayeredModel : public models::LinkModel {
 public:
  std::vector<models::LinkLogits> forward(const std::vector<models::SequenceInput>& batch) override {
    ++calls_;
    for (int layer = 0; layer < 10; ++layer) {
      if (models::forward_cancelled()) throw models::ForwardCancelled();
      std::this_thread::sleep_for(30ms);
      ++layers_run;
    }
    std::vector<models::LinkLogits> out;
    for (const auto& s : batch) out.push_back(link_first_token(s));
    return out;
  }
  int64_t forward_calls() const override { return calls_; }
  int layers_run = 0;

 private:
  int64_t calls_ = 0;
};

TEST(Limits, AForwardWhoseRequestsAreAllPastTheirDeadlineStopsBetweenLayers) {
  auto model = std::make_unique<LayeredModel>();
  LayeredModel* layered = model.get();
  Engine engine(std::make_unique<Engine::Impl>(
      Engine::Impl{text::Tokenizer::from_model_dir(uie::testing::model_dir(), models::rex::added_tokens()), std::move(model), {}}));
  Request late{"北京大学", kThreeLevels, {}};
  late.deadline = std::chrono::steady_clock::now() + 100ms;
  Request on_time{"上海", R"j({"人物": null})j", {}};
  const auto start = std::chrono::steady_clock::now();
  std::vector<Result> r = engine.extract_batch({late});
  EXPECT_LT(std::chrono::steady_clock::now() - start, 250ms);  // not the 300 ms of a whole forward
  EXPECT_EQ(r[0].error_kind, ErrorKind::kCancelled) << r[0].error;
  EXPECT_LE(layered->layers_run, 6);
  // A forward that also carries a request still within its deadline runs to its end.
  layered->layers_run = 0;
  late.deadline = std::chrono::steady_clock::now() + 100ms;
  r = engine.extract_batch({late, on_time});
  EXPECT_EQ(layered->layers_run, 10);
  EXPECT_EQ(r[0].error_kind, ErrorKind::kCancelled) << r[0].error;
  EXPECT_TRUE(r[1].ok()) << r[1].error;
}

TEST(Limits, CostCountsThePromptsOfTheSchemaNotJustTheText) {
  Fake f = fake_engine(uie::testing::no_links);
  Limits limits;
  limits.max_schema_types = 20000;
  f.engine.set_limits(limits);
  const std::string text = "国务院总理李克强在北京会见了微软公司总裁比尔盖茨";
  const int64_t tokens = f.engine.count_tokens(text);
  EXPECT_EQ(f.engine.estimate_cost(Request{text, R"j({"人物": null, "地点": null})j", {}}), tokens);
  EXPECT_EQ(f.engine.estimate_cost(Request{text, kThreeLevels, {}}), 3 * tokens);  // one pass per level
  nlohmann::ordered_json many = nlohmann::ordered_json::object();
  for (int i = 0; i < 10000; ++i) many[std::string("类型").append(std::to_string(i))] = nullptr;
  const int64_t cost = f.engine.estimate_cost(Request{text, many.dump(), {}});
  // ~8 tokens per "[TYPE]类型1234" in chunks of 256: a few hundred level-0 prompts.
  EXPECT_GT(cost, 200 * tokens);
  EXPECT_EQ(cost % tokens, 0);
  // The estimate checks what extract would refuse.
  limits.max_schema_types = 9999;
  f.engine.set_limits(limits);
  EXPECT_THROW(f.engine.estimate_cost(Request{text, many.dump(), {}}), Error);
  Options bad;
  bad.link_threshold = 100;
  EXPECT_THROW(f.engine.estimate_cost(Request{text, kThreeLevels, bad}), Error);
}

TEST(Limits, CostCountsTheBlankRerunOfClassification) {
  Fake f = fake_engine(uie::testing::no_links);
  const std::string text = "[CLASSIFY]这部电影拍得真好看，演员也很用心";
  const std::string labels = R"j({"正面": null, "负面": null})j";
  const int64_t tokens = f.engine.count_tokens(text);
  f.engine.extract(text, labels);
  EXPECT_EQ(f.model->sequences(), 2);  // nothing linked at level 0: the blank rerun scores every label again
  EXPECT_EQ(f.engine.estimate_cost(Request{text, labels, {}}), 2 * tokens);
  EXPECT_EQ(f.engine.estimate_cost(Request{"[MULTICLASSIFY]这部电影拍得真好看", labels, {}}),
            2 * f.engine.count_tokens("[MULTICLASSIFY]这部电影拍得真好看"));
}

}  // namespace
}  // namespace rexnlu
