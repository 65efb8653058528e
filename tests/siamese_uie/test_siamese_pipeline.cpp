// End-to-end parity with the original SiameseUIE pipeline: real tokenizer + real CPU model on the
// tiny model against every case of tests/data/siamese_uie_tiny/e2e_cases.jsonl (exactly
// `expected`), plus the pipeline's own properties: each window's lower layers run once per
// request, one forward per schema level, options that do not apply are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <set>

#include "engine/engine_impl.h"
#include "models/registry.h"
#include "rexnlu/tasks.h"
#include "siamese_fixtures.h"
#include "uie/e2e_case.h"
#include "uie/siamese_run.h"
#include "uie/utf8.h"

namespace rexnlu {
namespace {

using siamese_testing::e2e_cases;
using siamese_testing::tiny_dir;

std::vector<Path> to_paths(const std::vector<uie::OutputPath>& paths) {
  std::vector<Path> out;
  for (const auto& p : paths) {
    Path q;
    for (const auto& it : p) q.push_back(Span{it.type, it.span, it.start, it.end, 0});
    out.push_back(q);
  }
  return out;
}

using rexnlu::testing::paths_json;

// Wraps the real model and counts what runs through the lower layers and the joint layers.
class CountingModel : public models::PointerModel {
 public:
  explicit CountingModel(std::unique_ptr<models::PointerModel> inner) : inner_(std::move(inner)) {}
  std::vector<models::TextStates> encode_texts(const std::vector<std::vector<int32_t>>& windows) override {
    for (const auto& w : windows) text_tokens += static_cast<int64_t>(w.size());
    return inner_->encode_texts(windows);
  }
  std::vector<models::PointerLogits> forward(const std::vector<models::PointerInput>& batch) override {
    pairs += static_cast<int64_t>(batch.size());
    return inner_->forward(batch);
  }
  int64_t forward_calls() const override { return inner_->forward_calls(); }
  int64_t text_tokens = 0, pairs = 0;

 private:
  std::unique_ptr<models::PointerModel> inner_;
};

struct Counted {
  Engine engine;
  CountingModel* model;
  text::Tokenizer tok = text::Tokenizer::from_model_dir(tiny_dir(), {});
};

Counted counted_engine() {
  models::LoadedModel loaded = models::family_of(tiny_dir()).load(tiny_dir(), {});
  auto counting = std::make_unique<CountingModel>(std::move(loaded.pointer_network));
  CountingModel* model = counting.get();
  return Counted{Engine(std::make_unique<Engine::Impl>(Engine::Impl{std::move(loaded.tokenizer), nullptr, {}, {},
                                                                    Limits{}, std::move(counting)})),
                 model};
}

// Cases with hundreds of output paths run thousands of (prefix x type) pairs through the joint
// layers: they are the ctest test test_siamese_uie_heavy (tests/siamese_uie/CMakeLists.txt).
// (the event extraction cases over 19 event types that find something: 18 to 1,709 paths).
bool heavy(const nlohmann::ordered_json& c) { return c["schema"].size() > 10 && !c["expected"].empty(); }

void run_end_to_end_cases(bool heavy_ones) {
  Counted c = counted_engine();
  int cases = 0, same_count = 0;
  for (const auto& k : e2e_cases()) {
    if (heavy(k) != heavy_ones) continue;
    const std::string id = k["id"].get<std::string>();
    SCOPED_TRACE(id);
    Options o;
    o.dedup = false;  // the original keeps repeated paths
    const int64_t tokens_before = c.model->text_tokens, calls_before = c.engine.forward_calls();
    const Result r = c.engine.extract(k["text"].get<std::string>(), k["schema"].dump(), o);
    const bool same = paths_json(r) == k["expected"];
    if (id == "ee/金融舆情-3") {
      // One decision on the threshold (SiameseForward.TheOneDifferingDecisionIsOnTheThreshold): only
      // the paths of the trigger found at character 175 may differ.
      std::multiset<std::string> got, want;
      for (const auto& p : paths_json(r)) got.insert(p.dump());
      for (const auto& p : k["expected"]) want.insert(p.dump());
      std::vector<std::string> diff;
      std::set_symmetric_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(diff));
      for (const std::string& d : diff)
        EXPECT_EQ(nlohmann::json::parse(d)[0]["offset"][0], 175) << "a difference beyond the near-threshold tail: " << d;
    } else {
      EXPECT_TRUE(same) << "got " << paths_json(r).dump() << "\nexpected " << k["expected"].dump();
    }
    const int64_t n = static_cast<int64_t>(c.tok.encode(k["text"].get<std::string>()).size());
    int64_t window_tokens = 0;  // windows of 384 sliding by 352 (overlaps counted twice)
    for (int64_t start = 0;; start += 352) {
      window_tokens += std::min<int64_t>(384, n - start);
      if (start + 384 >= n) break;
    }
    EXPECT_EQ(c.model->text_tokens - tokens_before, window_tokens) << "each window through the lower layers once";
    ++cases;
    same_count += same;
    std::printf("%-40s %s  paths %4zu  batched forwards %lld\n", id.c_str(), same ? "same" : "DIFF", r.paths.size(),
                static_cast<long long>(c.engine.forward_calls() - calls_before));
  }
  EXPECT_EQ(cases, heavy_ones ? 3 : 25);
  std::printf("parity: %d/%d cases identical\n", same_count, cases);
}

TEST(SiamesePipeline, EveryEndToEndCaseOfTheOriginal) { run_end_to_end_cases(false); }
TEST(SiamesePipeline, HeavyEndToEndCasesOfTheOriginal) { run_end_to_end_cases(true); }

TEST(SiamesePipeline, OneForwardPerLevelAndTheTextEncodedOnce) {
  Counted c = counted_engine();
  for (const auto& k : e2e_cases()) {
    if (k["id"] != "re/coae2016-460") continue;  // 2 levels: subjects found, then their relations
    Options o;
    o.dedup = false;
    const int64_t calls = c.engine.forward_calls();
    const Result r = c.engine.extract(k["text"].get<std::string>(), k["schema"].dump(), o);
    EXPECT_EQ(c.engine.forward_calls() - calls, 2);  // level 0 and level 1, each one batched forward
    const text::Tokenizer tok = text::Tokenizer::from_model_dir(tiny_dir(), {});
    EXPECT_EQ(c.model->text_tokens, static_cast<int64_t>(tok.encode(k["text"].get<std::string>()).size()));
    EXPECT_EQ(paths_json(r), k["expected"]);
    return;
  }
  FAIL() << "case not found";
}

// Encoder work saved by encoding each window's lower layers once per request, on the fixture
// cases (light ones), counted for the real model's size (BERT-base: H 768, FFN 3072, 6 + 6
// layers): the original runs the lower layers over every (padded) window once per prefix call.
TEST(SiamesePipeline, EncoderWorkSavedOnTheFixtureCases) {
  models::LoadedModel loaded = models::family_of(tiny_dir()).load(tiny_dir(), {});
  CountingModel model(std::move(loaded.pointer_network));
  const double H = 768, I = 3072;
  // FLOPs of one BERT layer over one sequence of L tokens (dense products + attention scores/mix).
  const auto layer_flops = [&](double L) { return L * (2 * (4 * H * H + 2 * H * I)) + 4 * L * L * H; };
  double ours = 0, original = 0;
  for (const auto& k : e2e_cases()) {
    if (heavy(k)) continue;
    uie::SiameseOptions o;
    o.dedup = false;
    uie::SiameseRun run(loaded.tokenizer, k["text"].get<std::string>(), uie::Schema::parse(k["schema"].dump()), o);
    uie::run_siamese_requests(model, {&run}, Options{}.max_batch_cells);
    ASSERT_TRUE(run.done() && !run.error()) << k["id"];
    Result r;
    r.paths = to_paths(run.output());
    ASSERT_EQ(paths_json(r), k["expected"]) << k["id"];
    const auto& w = run.windows();
    const double padded = w.size() > 1 ? 384.0 : static_cast<double>(w[0].size());
    double once = 0;
    for (const auto& win : w) once += 6 * layer_flops(static_cast<double>(win.size()));
    ours += once;
    original += static_cast<double>(run.prefix_calls()) * static_cast<double>(w.size()) * 6 * layer_flops(padded);
  }
  EXPECT_LT(ours, original);
  std::printf("lower-layer text encoding, BERT-base size, 25 light fixture cases: %.1f GFLOP here, %.1f GFLOP in the "
              "original (%.0f%% saved)\n", ours / 1e9, original / 1e9, 100 * (1 - ours / original));
}

TEST(SiamesePipeline, RequestsOfABatchShareTheForwards) {
  Counted c = counted_engine();
  std::vector<Request> requests;
  for (const auto& k : e2e_cases()) {
    if (requests.size() == 4) break;
    Request q{k["text"].get<std::string>(), k["schema"].dump(), {}};
    q.options.dedup = false;
    requests.push_back(q);
  }
  const int64_t calls = c.engine.forward_calls();
  const std::vector<Result> results = c.engine.extract_batch(requests);
  EXPECT_LE(c.engine.forward_calls() - calls, 2);  // the deepest schema has 2 levels
  int i = 0;
  for (const auto& k : e2e_cases()) {
    if (i == 4) break;
    EXPECT_EQ(paths_json(results[static_cast<size_t>(i++)]), k["expected"]) << k["id"];
  }
}

TEST(SiamesePipeline, OptionsThatDoNotApplyAreRefusedAndThoseThatDoWork) {
  Engine engine = Engine::load(tiny_dir());
  Options o;
  o.max_len = 256;
  EXPECT_THROW(engine.extract("谷爱凌", R"({"人物": null})", o), Error);
  o = Options{};
  o.link_threshold = 1;
  try {
    engine.extract("谷爱凌", R"({"人物": null})", o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pointer_threshold"), std::string::npos) << e.what();
  }
  // A lower threshold finds more; byte offsets count UTF-8 bytes; no probabilities in the JSON.
  o = Options{};
  const std::string text = "1944年毕业于北大的名古屋铁道会长谷口清太郎等人在日本积极筹资，共筹款2.7亿日元。";
  const Result base = engine.extract(text, R"({"人物": null})", o);
  o.pointer_threshold = -20;
  const Result all = engine.extract(text, R"({"人物": null})", o);
  EXPECT_GT(all.paths.size(), base.paths.size());
  o.byte_offsets = true;
  const Result bytes = engine.extract(text, R"({"人物": null})", o);
  ASSERT_EQ(bytes.paths.size(), all.paths.size());
  const std::u32string cps = uie::decode_utf8(text, "text");
  for (size_t i = 0; i < all.paths.size(); ++i) {
    const Span& s = all.paths[i][0];
    const auto prefix_bytes = [&](int64_t cp) {
      return static_cast<int64_t>(uie::encode_utf8(cps.substr(0, static_cast<size_t>(std::max<int64_t>(0, cp)))).size());
    };
    EXPECT_EQ(bytes.paths[i][0].start, prefix_bytes(s.start));
    EXPECT_EQ(bytes.paths[i][0].end, prefix_bytes(s.end));
  }
  EXPECT_EQ(all.to_json().find("probability"), std::string::npos);
}

// Classification (RexUniNLU's [CLASSIFY] / [MULTICLASSIFY] task presets) has no SiameseUIE
// counterpart: the original would read the marker as plain text and extract spans from it, so a
// preset sent to a SiameseUIE model gets an error naming the marker instead of a silent non-answer.
TEST(SiamesePipeline, ClassificationPresetsAreRefusedWithAClearError) {
  Engine engine = Engine::load(tiny_dir());
  for (const char* task : {"classify", "multi_classify"}) {
    TaskArgs args;
    args.task = task;
    args.text = "这部电影很好看";
    args.labels = {"正向", "负向"};
    const TaskRequest t = build_task(args);
    try {
      engine.extract(t.text, t.schema);
      FAIL() << task << ": no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput) << e.what();
      EXPECT_NE(std::string(e.what()).find("CLASSIFY]"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("SiameseUIE"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(engine.extract("谷爱凌在北京夺冠", R"({"人物": null})"));
}

}  // namespace
}  // namespace rexnlu
