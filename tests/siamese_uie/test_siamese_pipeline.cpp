// End-to-end parity with the original SiameseUIE pipeline: real tokenizer + real CPU model on the
// tiny model against every case of tests/data/siamese_uie_tiny/e2e_cases.jsonl (exactly
// `expected`), plus the pipeline's own properties: each window's lower layers run once per
// request, one forward per schema level, options that do not apply are refused.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>

#include "engine/engine_impl.h"
#include "models/registry.h"
#include "siamese_fixtures.h"
#include "uie/siamese_run.h"
#include "uie/utf8.h"

namespace rexnlu {
namespace {

using siamese_testing::e2e_cases;
using siamese_testing::tiny_dir;

nlohmann::ordered_json output_of(const Result& r) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& path : r.paths) {
    nlohmann::ordered_json p = nlohmann::ordered_json::array();
    for (const auto& s : path) p.push_back({{"type", s.type}, {"span", s.span}, {"offset", {s.start, s.end}}});
    out.push_back(p);
  }
  return out;
}

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
};

Counted counted_engine() {
  models::LoadedModel loaded = models::family_of(tiny_dir()).load(tiny_dir(), {});
  auto counting = std::make_unique<CountingModel>(std::move(loaded.pointer_network));
  CountingModel* model = counting.get();
  return Counted{Engine(std::make_unique<Engine::Impl>(Engine::Impl{std::move(loaded.tokenizer), nullptr, {}, {},
                                                                    Limits{}, std::move(counting)})),
                 model};
}

// The original recomputes the lower layers of every window for each get_prefix_infos call (one
// per parent path), on windows padded to 384 once the text needs more than one.
int64_t original_lower_text_tokens(const std::string& text, const nlohmann::ordered_json& schema,
                                   const nlohmann::ordered_json& expected, int64_t text_tokens) {
  const int64_t n = text_tokens;
  const int64_t windows = n > 384 ? (n - 384 + 351) / 352 + 1 : 1;
  const int64_t per_call = windows > 1 ? windows * 384 : n;
  // Calls: the root, plus one per distinct found prefix whose type has a sub-schema. The
  // expected paths hold every prefix that led to output; prefixes with no output also cost a call
  // but are not visible here, so this is a lower bound on the original's work.
  std::set<std::string> parents;
  for (const auto& path : expected) {
    for (size_t k = 0; k + 1 < path.size(); ++k) {
      nlohmann::ordered_json prefix = nlohmann::ordered_json::array();
      for (size_t m = 0; m <= k; ++m) prefix.push_back(path[m]);
      parents.insert(prefix.dump());
    }
  }
  (void)text;
  (void)schema;
  return per_call * (1 + static_cast<int64_t>(parents.size()));
}

// Cases with hundreds of output paths run thousands of (prefix x type) pairs through the joint
// layers: they are the ctest test test_siamese_uie_heavy (tests/siamese_uie/CMakeLists.txt).
// (the event extraction cases over 19 event types that find something: 18 to 1,709 paths).
bool heavy(const nlohmann::ordered_json& c) { return c["schema"].size() > 10 && !c["expected"].empty(); }

void run_end_to_end_cases(bool heavy_ones) {
  Counted c = counted_engine();
  const text::Tokenizer tok = text::Tokenizer::from_model_dir(tiny_dir(), {});
  int cases = 0, same_count = 0;
  int64_t ours_lower = 0, original_lower = 0;
  for (const auto& k : e2e_cases()) {
    if (heavy(k) != heavy_ones) continue;
    const std::string id = k["id"].get<std::string>();
    SCOPED_TRACE(id);
    Options o;
    o.dedup = false;  // the original keeps repeated paths
    const int64_t tokens_before = c.model->text_tokens, calls_before = c.engine.forward_calls();
    const Result r = c.engine.extract(k["text"].get<std::string>(), k["schema"].dump(), o);
    const bool same = output_of(r) == k["expected"];
    EXPECT_TRUE(same) << "got " << output_of(r).dump() << "\nexpected " << k["expected"].dump();
    if (!same) std::ofstream("/tmp/rexnlu_siamese_diff_" + std::to_string(cases) + ".json") << output_of(r).dump();
    const int64_t n = static_cast<int64_t>(tok.encode(k["text"].get<std::string>()).size());
    const int64_t ours = c.model->text_tokens - tokens_before;
    const int64_t original = original_lower_text_tokens(k["text"], k["schema"], k["expected"], n);
    ours_lower += ours;
    original_lower += original;
    ++cases;
    same_count += same;
    std::printf("%-40s %s  paths %4zu  forwards %lld  lower-layer text tokens %5lld (original >= %6lld)\n", id.c_str(),
                same ? "same" : "DIFF", r.paths.size(), static_cast<long long>(c.engine.forward_calls() - calls_before),
                static_cast<long long>(ours), static_cast<long long>(original));
  }
  EXPECT_EQ(cases, heavy_ones ? 3 : 25);
  std::printf("parity: %d/%d cases identical; lower-layer text tokens: %lld here, >= %lld in the original\n",
              same_count, cases, static_cast<long long>(ours_lower), static_cast<long long>(original_lower));
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
    EXPECT_EQ(output_of(r), k["expected"]);
    return;
  }
  FAIL() << "case not found";
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
    EXPECT_EQ(output_of(results[static_cast<size_t>(i++)]), k["expected"]) << k["id"];
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

}  // namespace
}  // namespace rexnlu
