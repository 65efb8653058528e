// One test per tokenizer rule, with expectations taken from HF tokenizers 0.23.2 runs of the
// same strings (the RexUniNLU vocab).
#include <gtest/gtest.h>

#include "rexnlu/error.h"
#include "text/char_classes.h"
#include "text/test_util.h"

namespace rexnlu::text {
namespace {

using testing::tiny_tokenizer;

// encode_raw as (token, offset) pairs, which read better in failure messages.
std::vector<std::pair<std::string, std::pair<int, int>>> pieces(std::string_view text) {
  const Tokenizer& tok = tiny_tokenizer();
  const Encoding e = tok.encode_raw(text);
  std::vector<std::pair<std::string, std::pair<int, int>>> out;
  for (size_t i = 0; i < e.size(); ++i) out.push_back({tok.id_to_token(e.ids[i]), {e.offsets[i].start, e.offsets[i].end}});
  return out;
}
using P = std::vector<std::pair<std::string, std::pair<int, int>>>;

TEST(TokenizerRules, CjkRangesOfTheRustTable) {
  // The range after Extension D starts at 2B920 in the Rust normalizer (Python: 2B820).
  EXPECT_EQ(pieces("a\U0002B820b"), (P{{"[UNK]", {0, 3}}}));  // not padded: one word
  EXPECT_EQ(pieces("a\U0002B920b"), (P{{"a", {0, 1}}, {"[UNK]", {1, 2}}, {"b", {2, 3}}}));
  for (char32_t c : {0x4E00, 0x9FFF, 0x3400, 0x4DBF, 0x20000, 0x2A6DF, 0x2A700, 0x2B73F, 0x2B740, 0x2B81F,
                     0x2B920, 0x2CEAF, 0xF900, 0xFAFF, 0x2F800, 0x2FA1F}) {
    EXPECT_TRUE(is_cjk_ideograph(c)) << std::hex << uint32_t(c);
  }
  for (char32_t c : {0x4DFF, 0x4DC0, 0x2A6E0, 0x2B820, 0x2B91F, 0x2CEB0, 0xF8FF, 0xFB00, 0x2F7FF, 0x2FA20, 0x30000}) {
    EXPECT_FALSE(is_cjk_ideograph(c)) << std::hex << uint32_t(c);
  }
  EXPECT_EQ(pieces("中文字"), (P{{"中", {0, 1}}, {"文", {1, 2}}, {"字", {2, 3}}}));
}

TEST(TokenizerRules, AccentsAreStrippedAndOffsetsKeepTheOriginalCharacter) {
  EXPECT_EQ(pieces("café"), (P{{"ca", {0, 2}}, {"##f", {2, 3}}, {"##e", {3, 4}}}));
  // e + COMBINING ACUTE + x: the dropped mark still belongs to the word's span.
  EXPECT_EQ(pieces("e\u0301x"), (P{{"ex", {0, 3}}}));
  // İ: NFD gives I + U+0307, the mark is dropped, I is lowercased.
  EXPECT_EQ(pieces("İx"), (P{{"i", {0, 1}}, {"##x", {1, 2}}}));
  EXPECT_EQ(pieces("CAFÉ"), pieces("café"));
}

TEST(TokenizerRules, ControlAndFormatCharactersAreDropped) {
  EXPECT_EQ(pieces(std::string("a\0b", 3)), (P{{"ab", {0, 3}}}));
  EXPECT_EQ(pieces("a\u200Db"), (P{{"ab", {0, 3}}}));   // ZWJ (Cf)
  EXPECT_EQ(pieces("a\uFFFDb"), (P{{"ab", {0, 3}}}));   // replacement character
  EXPECT_EQ(pieces("a\uE000b"), (P{{"ab", {0, 3}}}));   // private use (Co)
  EXPECT_EQ(pieces("a\u0085b"), (P{{"ab", {0, 3}}}));   // NEL is Cc: dropped, not a space
  EXPECT_EQ(pieces("x\U0010FFFFy"), (P{{"[UNK]", {0, 3}}}));  // unassigned (Cn) is kept
  EXPECT_EQ(pieces("a\u3000b\tc\u2028d"), (P{{"a", {0, 1}}, {"b", {2, 3}}, {"c", {4, 5}}, {"d", {6, 7}}}));
}

TEST(TokenizerRules, PunctuationIsAsciiPunctuationOrUnicode8P) {
  EXPECT_EQ(pieces("a$b_c"), (P{{"a", {0, 1}}, {"$", {1, 2}}, {"b", {2, 3}}, {"_", {3, 4}}, {"c", {4, 5}}}));
  EXPECT_EQ(pieces("a\u166Db"), (P{{"a", {0, 1}}, {"[UNK]", {1, 2}}, {"b", {2, 3}}}));  // Po in Unicode 8.0
  EXPECT_EQ(pieces("a\u2E52b"), (P{{"[UNK]", {0, 3}}}));  // Po only since Unicode 13: not split
  EXPECT_EQ(pieces("你好，世界！"),
            (P{{"你", {0, 1}}, {"好", {1, 2}}, {"，", {2, 3}}, {"世", {3, 4}}, {"界", {4, 5}}, {"！", {5, 6}}}));
}

TEST(TokenizerRules, WordsLongerThan100CharactersBecomeOneUnknown) {
  const Tokenizer& tok = tiny_tokenizer();
  const Encoding e100 = tok.encode_raw(std::string(100, 'a'));
  ASSERT_EQ(e100.size(), 100u);  // a ##a ##a ...
  EXPECT_EQ(e100.ids[0], tok.token_to_id("a"));
  EXPECT_EQ(e100.ids[99], tok.token_to_id("##a"));
  EXPECT_EQ(e100.offsets[99], (Offset{99, 100}));
  const Encoding e101 = tok.encode_raw(std::string(101, 'a') + " b");
  EXPECT_EQ(e101.ids, (std::vector<int32_t>{tok.unk_id(), tok.token_to_id("b")}));
  EXPECT_EQ(e101.offsets, (std::vector<Offset>{{0, 101}, {102, 103}}));
  std::string accented100;
  for (int i = 0; i < 100; ++i) accented100 += "é";
  EXPECT_EQ(tok.encode_raw(accented100).size(), 100u);
  EXPECT_EQ(tok.encode_raw(accented100 + "é").offsets, (std::vector<Offset>{{0, 101}}));
}

TEST(TokenizerRules, AddedTokensMatchInsideWordsAndCaseSensitively) {
  EXPECT_EQ(pieces("ab[SEP]cd"), (P{{"ab", {0, 2}}, {"[SEP]", {2, 7}}, {"c", {7, 8}}, {"##d", {8, 9}}}));
  EXPECT_EQ(pieces("[cls]x[CLS]y"), (P{{"[", {0, 1}}, {"cl", {1, 3}}, {"##s", {3, 4}}, {"]", {4, 5}}, {"x", {5, 6}},
                                        {"[CLS]", {6, 11}}, {"y", {11, 12}}}));
  const Tokenizer& tok = tiny_tokenizer();
  const Encoding e = tok.encode_raw("[CLASSIFY]好[MULTICLASSIFY][PREFIX][TYPE]");
  EXPECT_EQ(e.ids, (std::vector<int32_t>{12802, tok.token_to_id("好"), 12803, 12800, 12801}));
  EXPECT_EQ(e.offsets, (std::vector<Offset>{{0, 10}, {10, 11}, {11, 26}, {26, 34}, {34, 40}}));
  EXPECT_EQ(tok.encode_raw("[PREFIX").ids.front(), tok.token_to_id("["));
}

TEST(TokenizerRules, InvalidUtf8NamesTheByteOffset) {
  const Tokenizer& tok = tiny_tokenizer();
  for (const auto& [bytes, offset] : std::vector<std::pair<std::string, int>>{
           {"abc\xff", 3}, {"ab\x80", 2}, {"\xe4\xb8", 0}, {"ok\xc0\xaf", 2}, {"x\xed\xa0\x80", 1}, {"\xf4\x90\x80\x80", 0}}) {
    try {
      tok.encode(bytes);
      ADD_FAILURE() << "no error for input with a bad byte at " << offset;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
      EXPECT_NE(std::string(e.what()).find("byte offset " + std::to_string(offset)), std::string::npos) << e.what();
    }
  }
}

TEST(TokenizerRules, EncodeAddsClsAndSep) {
  const Tokenizer& tok = tiny_tokenizer();
  const Encoding e = tok.encode("");
  EXPECT_EQ(e.ids, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(e.offsets, (std::vector<Offset>{{0, 0}, {0, 0}}));
  EXPECT_EQ(e.type_ids, (std::vector<int8_t>{0, 0}));
}

}  // namespace
}  // namespace rexnlu::text
