// The level state machine with the real tokenizer and fake models: replaying the original's own
// level-0 logits (forward_cases.jsonl) must reproduce e2e_cases.jsonl wherever every sequence of
// a case is a replayable level-0 prompt; forward counts; bad input; a 1 MB text.
#include <gtest/gtest.h>

#include <map>

#include "fixtures.h"
#include "rexnlu/error.h"
#include "text/tokenizer.h"
#include "uie/pipeline.h"

namespace rexnlu::uie {
namespace {

using testing::FakeLinkModel;
using testing::link_all_types;
using testing::read_jsonl;

const text::Tokenizer& tokenizer() {
  static const text::Tokenizer tok = text::Tokenizer::from_model_dir(testing::model_dir(), models::rex::added_tokens());
  return tok;
}

nlohmann::ordered_json to_json(const std::vector<OutputPath>& paths) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& path : paths) {
    nlohmann::ordered_json p = nlohmann::ordered_json::array();
    for (const auto& it : path) p.push_back({{"type", it.type}, {"span", it.span}, {"offset", {it.start, it.end}}});
    out.push_back(p);
  }
  return out;
}

PipelineOptions case_options(const nlohmann::ordered_json& c) {
  PipelineOptions o;
  o.dedup = false;
  if (c.contains("options") && c["options"].is_object()) {
    const auto& j = c["options"];
    o.max_len = j.value("max_len", 512);
    o.stride = j.value("stride", 32);
    o.hint_max_len = j.value("hint_max_len", 256);
  }
  return o;
}

TEST(Pipeline, ReplayingTheOriginalsLevelZeroLogitsGivesTheExpectedOutput) {
  std::map<std::string, nlohmann::ordered_json> forward;
  for (auto& f : read_jsonl(testing::tiny_dir() + "/forward_cases.jsonl")) forward[f["id"].get<std::string>()] = f;
  int replayed = 0, prompt_checked = 0;
  for (const auto& c : read_jsonl(testing::tiny_dir() + "/e2e_cases.jsonl")) {
    const std::string id = c["id"].get<std::string>();
    SCOPED_TRACE(id);
    auto f = forward.find(id);
    if (f == forward.end()) continue;
    const auto ids = f->second["input_ids"].get<std::vector<int32_t>>();
    bool all_replayed = true, first = true;
    FakeLinkModel model([&](const models::SequenceInput& s) {
      if (first) {
        EXPECT_EQ(s.ids, ids) << "level-0 prompt differs from the original's";
        ++prompt_checked;
        first = false;
      }
      if (s.ids != ids) {
        all_replayed = false;
        return testing::no_links(s);
      }
      models::LinkLogits z;
      for (const auto& row : f->second["logits"]) {
        for (const auto& v : row) z.push_back(static_cast<float>(v.get<double>()));
      }
      return z;
    });
    RequestRun run(tokenizer(), c["text"].get<std::string>(), Schema::from_json(c["schema"]), case_options(c));
    std::vector<RequestRun*> runs{&run};
    run_requests(model, runs, int64_t{1} << 40);
    ASSERT_FALSE(run.error()) << *run.error();
    if (!all_replayed) continue;
    ++replayed;
    EXPECT_EQ(to_json(run.output()), c["expected"]);
    EXPECT_EQ(model.sequences(), c["forward_calls"].get<int64_t>());
  }
  EXPECT_EQ(prompt_checked, 24);
  EXPECT_GE(replayed, 15);
  std::printf("replayed %d e2e cases fully from the original's level-0 logits\n", replayed);
}

TEST(Pipeline, OneForwardPerLevelAcrossRequests) {
  const char* schema = R"j({"人物": {"任职于(组织机构)": null, "毕业院校(组织机构)": null}, "组织机构": {"简称(组织机构)": null}})j";
  FakeLinkModel model([](const models::SequenceInput& s) { return link_all_types(s, 0, 1); });
  std::vector<std::unique_ptr<RequestRun>> owned;
  std::vector<RequestRun*> runs;
  for (const char* text : {"谷口清太郎毕业于北大。", "小明在北京大学读书。", "张三于2019年在杭州创办了公司。"}) {
    owned.push_back(std::make_unique<RequestRun>(tokenizer(), text, Schema::parse(schema), PipelineOptions{}));
    runs.push_back(owned.back().get());
  }
  const int64_t forwards = run_requests(model, runs, int64_t{1} << 40);
  EXPECT_EQ(forwards, 2);  // level 0 (subjects) and level 1 (relations), all three requests merged
  EXPECT_EQ(model.forward_calls(), 2);
  EXPECT_EQ(model.sequences(), 6);
  for (auto* r : runs) {
    ASSERT_TRUE(r->done());
    const auto out = r->output();
    ASSERT_EQ(out.size(), 3u);  // 2 subject types -> 3 relation leaves, each linked to the same span
    EXPECT_EQ(out[0].size(), 2u);
  }
  EXPECT_EQ(to_json(runs[0]->output())[0][0]["span"], "谷口");
}

TEST(Pipeline, BadInputIsAnInputError) {
  Schema s = Schema::parse(R"j({"人物": null})j");
  auto expect_input_error = [&](std::string text, PipelineOptions o) {
    try {
      RequestRun run(tokenizer(), text, s, o);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput) << e.what();
    }
  };
  expect_input_error("", {});
  expect_input_error("abc\xff\xfe", {});
  expect_input_error("abc\xe4\xb8", {});
  // Options out of range are refused by the engine before a run is built (test_limits.cpp).
  // And a good request still runs afterwards.
  FakeLinkModel model(testing::no_links);
  RequestRun ok(tokenizer(), "北京", s, {});
  std::vector<RequestRun*> runs{&ok};
  EXPECT_EQ(run_requests(model, runs, 1 << 30), 1);
  EXPECT_TRUE(ok.output().empty());
}

TEST(Pipeline, AOneMegabyteTextRunsInBoundedForwards) {
  std::string text;
  while (text.size() < (1u << 20)) text += "小明在北京大学读书，后来去了上海交通大学任教。";
  FakeLinkModel model(testing::no_links);
  RequestRun run(tokenizer(), text, Schema::parse(R"j({"人物": null, "组织机构": null})j"), PipelineOptions{});
  std::vector<RequestRun*> runs{&run};
  const int64_t budget = int64_t{16} * 512 * 512;  // at most 16 full-length sequences per forward
  const int64_t forwards = run_requests(model, runs, budget);
  ASSERT_FALSE(run.error());
  EXPECT_LE(model.max_batch(), 16);
  const int64_t windows = model.sequences();
  EXPECT_GT(windows, 700);  // ~350k text tokens / 480-token windows sliding by 480 - 32
  EXPECT_EQ(forwards, (windows + 15) / 16);
  EXPECT_TRUE(run.output().empty());
}

}  // namespace
}  // namespace rexnlu::uie
