// Parity with HF tokenizers' fast BertTokenizer on outputs recorded from the original
// implementation (tests/data/rexuninlu_vocab_cases.jsonl, forward_cases.jsonl, spec 1.3).
#include <gtest/gtest.h>

#include <map>

#include "text/test_util.h"

namespace rexnlu::text {
namespace {

using testing::offsets_of;
using testing::read_jsonl;
using testing::test_data;
using testing::tiny_tokenizer;

std::string describe(const Encoding& got, const std::vector<int32_t>& ids, const std::vector<Offset>& offs) {
  std::ostringstream s;
  const size_t n = std::max(got.size(), ids.size());
  for (size_t i = 0; i < n; ++i) {
    const bool same = i < got.size() && i < ids.size() && got.ids[i] == ids[i] && got.offsets[i] == offs[i];
    if (same) continue;
    s << "  token " << i << ": got ";
    if (i < got.size()) s << got.ids[i] << " [" << got.offsets[i].start << "," << got.offsets[i].end << ")";
    s << " expected ";
    if (i < ids.size()) s << ids[i] << " [" << offs[i].start << "," << offs[i].end << ")";
    s << "\n";
    if (s.tellp() > 600) break;
  }
  return s.str();
}

TEST(TokenizerParity, AllVocabCases) {
  const auto cases = read_jsonl(test_data("rexuninlu_vocab_cases.jsonl"));
  ASSERT_EQ(cases.size(), 2533u);  // the whole fixture file, one record per '\n'-terminated line
  const Tokenizer& tok = tiny_tokenizer();
  size_t mismatches = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    const std::string text = cases[k]["text"].get<std::string>();
    const auto ids = cases[k]["input_ids"].get<std::vector<int32_t>>();
    const auto offs = offsets_of(cases[k]["offsets"]);
    const Encoding got = tok.encode(text);
    if (got.ids == ids && got.offsets == offs) continue;
    if (++mismatches <= 10) {
      ADD_FAILURE() << "case " << k << " text " << nlohmann::json(text).dump() << "\n" << describe(got, ids, offs);
    }
  }
  EXPECT_EQ(mismatches, 0u) << "of " << cases.size() << " cases";
}

// The pair test vector of spec section 1.3 (device run of transformers 5.17 / tokenizers 0.23.2).
TEST(TokenizerParity, SpecPairVector) {
  const Tokenizer& tok = tiny_tokenizer();
  const std::string text =
      "Apple公司CEO Tim Cook于2023年9月在Cupertino发布iPhone 15，售价5999元！Ｈｅｌｌｏ　ｗｏｒｌｄ café naïve";
  const Encoding e = tok.encode_pair("[PREFIX][TYPE]人物", text);
  const std::vector<int32_t> ids = {
      1,     12800, 12801, 348,   4224,  2,     11718, 11898, 652,   989,   8254,  11898, 11908, 10912,
      8995,  12361, 318,   210,   207,   211,   213,   2143,  224,   3094,  1403,  8254,  11914, 12663,
      11913, 12332, 11908, 958,   2103,  11859, 11898, 208,   217,   183,   1182,  393,   216,   225,
      225,   225,   632,   172,   3,     3,     8989,  11899, 11898, 9085,  12609, 2};
  EXPECT_EQ(e.ids, ids);
  ASSERT_EQ(e.size(), ids.size());
  // Hint part: [CLS] [PREFIX] [TYPE] 人 物 [SEP].
  const std::vector<Offset> hint = {{0, 0}, {0, 8}, {8, 14}, {14, 15}, {15, 16}, {0, 0}};
  EXPECT_EQ(std::vector<Offset>(e.offsets.begin(), e.offsets.begin() + 6), hint);
  // Text part: the offsets the spec lists in full at the start and the end.
  const std::vector<Offset> text_head = {{0, 4}, {4, 5}, {5, 6}, {6, 7}, {7, 8}, {8, 9}, {9, 10}, {11, 14}, {15, 17}, {17, 19}, {19, 20}};
  EXPECT_EQ(std::vector<Offset>(e.offsets.begin() + 6, e.offsets.begin() + 17), text_head);
  const std::vector<Offset> text_tail = {{57, 62}, {63, 68}, {69, 71}, {71, 72}, {72, 73}, {74, 76}, {76, 79}};
  EXPECT_EQ(std::vector<Offset>(e.offsets.end() - 8, e.offsets.end() - 1), text_tail);
  EXPECT_EQ(e.offsets.back(), (Offset{0, 0}));
  for (size_t i = 0; i < e.size(); ++i) EXPECT_EQ(e.type_ids[i], i < 6 ? 0 : 1) << i;
}

// forward_cases.jsonl holds [CLS] hint [SEP] text [SEP] as the original pipeline built it; the
// text of each case is in e2e_cases.jsonl under the same id.
TEST(TokenizerParity, ForwardCasePrompts) {
  std::map<std::string, nlohmann::json> e2e;
  for (auto& c : read_jsonl(test_data("rexuninlu_tiny/e2e_cases.jsonl"))) e2e[c["id"].get<std::string>()] = c;
  const auto cases = read_jsonl(test_data("rexuninlu_tiny/forward_cases.jsonl"));
  ASSERT_EQ(cases.size(), 24u);
  const Tokenizer& tok = tiny_tokenizer();
  for (const auto& c : cases) {
    const std::string id = c["id"].get<std::string>();
    SCOPED_TRACE(id);
    ASSERT_TRUE(e2e.count(id));
    const nlohmann::json options =
        e2e[id]["options"].is_object() ? e2e[id]["options"] : nlohmann::json::object();
    const int max_len = options.value("max_len", 512);
    const std::string text = e2e[id]["text"].get<std::string>();
    const bool classification = text.starts_with("[CLASSIFY]") || text.starts_with("[MULTICLASSIFY]");
    const int stride = options.value("stride", classification ? 0 : 32);
    const auto windows = tok.encode_pair_windows(c["hint"].get<std::string>(), text, max_len, stride);
    // The recorded forward pass is the first window of the first hint chunk.
    const Encoding& e = windows.front();
    EXPECT_EQ(e.ids, c["input_ids"].get<std::vector<int32_t>>());
    EXPECT_EQ(e.offsets, offsets_of(c["offsets"]));
    const auto type_ids = c["token_type_ids"].get<std::vector<int>>();
    EXPECT_EQ(std::vector<int>(e.type_ids.begin(), e.type_ids.end()), type_ids);
  }
}

}  // namespace
}  // namespace rexnlu::text
