// Parity with HF tokenizers on strings aimed at each rule (Unicode versions of the categories,
// NFD, lowercase, CJK ranges, added tokens, 100-char words) and on seeded random strings, for
// several normalizer settings, plus pair windows from a pre-0.23 release
// (tests/data/text/hf_rule_cases.jsonl, written by make_hf_cases.py with HF's own library).
#include <gtest/gtest.h>

#include <map>

#include "text/test_util.h"

namespace rexnlu::text {
namespace {

namespace fs = std::filesystem;
using testing::offsets_of;
using testing::read_jsonl;
using testing::test_data;

const std::vector<nlohmann::json>& cases() {
  static const auto all = read_jsonl(test_data("text/hf_rule_cases.jsonl"));
  return all;
}

// A model directory with the tiny model's vocab and the given tokenizer_config.json.
const Tokenizer& tokenizer_for(const nlohmann::json& config) {
  static std::map<std::string, Tokenizer> cache;
  const std::string key = config.dump();
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const fs::path dir = fs::temp_directory_path() / ("rexnlu_text_test_" + std::to_string(cache.size()) + "_" +
                                                    std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::create_directories(dir);
  fs::copy_file(testing::tiny_model_dir() / "vocab.txt", dir / "vocab.txt", fs::copy_options::overwrite_existing);
  std::ofstream(dir / "tokenizer_config.json") << config.dump();
  Tokenizer tokenizer = Tokenizer::from_model_dir(dir, models::rex::added_tokens());
  fs::remove_all(dir);
  return cache.emplace(key, std::move(tokenizer)).first->second;
}

std::string escaped(const std::string& text) { return nlohmann::json(text).dump(); }

TEST(HfReference, SingleSequences) {
  size_t checked = 0, mismatches = 0;
  for (const auto& c : cases()) {
    if (c["kind"] != "single") continue;
    ++checked;
    const Tokenizer& tok = tokenizer_for(c["config"]);
    const std::string text = c["text"].get<std::string>();
    const Encoding got = tok.encode(text);
    const auto ids = c["input_ids"].get<std::vector<int32_t>>();
    const auto offsets = offsets_of(c["offsets"]);
    if (got.ids == ids && got.offsets == offsets) continue;
    if (++mismatches <= 10) {
      std::ostringstream s;
      for (size_t i = 0; i < got.size(); ++i) s << got.ids[i] << "[" << got.offsets[i].start << "," << got.offsets[i].end << ") ";
      ADD_FAILURE() << "config " << c["config"].dump() << " text " << escaped(text) << "\n  got      " << s.str()
                    << "\n  expected " << c["input_ids"].dump() << " " << c["offsets"].dump();
    }
  }
  EXPECT_GT(checked, 2000u);
  EXPECT_EQ(mismatches, 0u) << "of " << checked;
}

TEST(HfReference, PairWindows) {
  const Tokenizer& tok = testing::tiny_tokenizer();
  size_t checked = 0;
  for (const auto& c : cases()) {
    if (c["kind"] != "windows") continue;
    ++checked;
    const std::string hint = c["hint"].get<std::string>();
    const std::string text = c["text"].get<std::string>();
    SCOPED_TRACE("hint " + escaped(hint) + " max_len " + c["max_len"].dump() + " stride " + c["stride"].dump());
    const auto got = tok.encode_pair_windows(hint, text, c["max_len"].get<int>(), c["stride"].get<int>());
    const auto& expected = c["windows"];
    ASSERT_EQ(got.size(), expected.size());
    for (size_t w = 0; w < got.size(); ++w) {
      EXPECT_EQ(got[w].ids, expected[w]["input_ids"].get<std::vector<int32_t>>()) << "window " << w;
      EXPECT_EQ(got[w].offsets, offsets_of(expected[w]["offsets"])) << "window " << w;
      const auto types = expected[w]["token_type_ids"].get<std::vector<int>>();
      EXPECT_EQ(std::vector<int>(got[w].type_ids.begin(), got[w].type_ids.end()), types) << "window " << w;
    }
  }
  EXPECT_EQ(checked, 10u);
}

}  // namespace
}  // namespace rexnlu::text
