// Pair encodings and the overflow windows of spec 5.2 (HF tokenizers before 0.23).
#include <gtest/gtest.h>

#include "rexnlu/error.h"
#include "text/test_util.h"

namespace rexnlu::text {
namespace {

using testing::tiny_tokenizer;

// 60 text tokens: one per CJK character.
const std::string kText = [] {
  std::string s;
  for (int i = 0; i < 6; ++i) s += "北大西洋议会春季会议";
  return s;
}();

TEST(PairWindows, OneWindowWhenEverythingFits) {
  const Tokenizer& tok = tiny_tokenizer();
  const auto windows = tok.encode_pair_windows("[PREFIX][TYPE]人物", "张三在北京", 512, 32);
  ASSERT_EQ(windows.size(), 1u);
  const Encoding& e = windows[0];
  EXPECT_EQ(e.ids, (std::vector<int32_t>{1, 12800, 12801, tok.token_to_id("人"), tok.token_to_id("物"), 2,
                                         tok.token_to_id("张"), tok.token_to_id("三"), tok.token_to_id("在"),
                                         tok.token_to_id("北"), tok.token_to_id("京"), 2}));
  EXPECT_EQ(e.type_ids, (std::vector<int8_t>{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1}));
  // Offsets of the second sequence refer to it, not to the first.
  EXPECT_EQ(e.offsets, (std::vector<Offset>{{0, 0}, {0, 8}, {8, 14}, {14, 15}, {15, 16}, {0, 0},
                                            {0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {0, 0}}));
  const Encoding pair = tok.encode_pair("[PREFIX][TYPE]人物", "张三在北京");
  EXPECT_EQ(pair.ids, e.ids);
  EXPECT_EQ(pair.offsets, e.offsets);
  EXPECT_EQ(pair.type_ids, e.type_ids);
}

TEST(PairWindows, WindowsStartEveryMMinusStrideAndCoverTheText) {
  const Tokenizer& tok = tiny_tokenizer();
  const Encoding text = tok.encode_raw(kText);
  const Encoding hint = tok.encode_raw("提示");
  ASSERT_EQ(text.size(), 60u);
  // max_length 25: M = 25 - 3 - 2 = 20 text tokens per window, stride 6: starts 0, 14, 28, 42.
  const auto windows = tok.pair_windows(hint, text, 25, 6);
  ASSERT_EQ(windows.size(), 4u);
  const size_t starts[] = {0, 14, 28, 42}, ends[] = {20, 34, 48, 60};
  for (size_t w = 0; w < windows.size(); ++w) {
    const Encoding& e = windows[w];
    const size_t n = ends[w] - starts[w];
    ASSERT_EQ(e.size(), 2 + 3 + n) << w;
    EXPECT_EQ(e.ids[0], tok.cls_id());
    EXPECT_EQ(e.ids[3], tok.sep_id());
    EXPECT_EQ(e.ids.back(), tok.sep_id());
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(e.ids[4 + i], text.ids[starts[w] + i]) << w << " " << i;
      EXPECT_EQ(e.offsets[4 + i], text.offsets[starts[w] + i]) << w << " " << i;  // offsets into the text
      EXPECT_EQ(e.type_ids[4 + i], 1);
    }
  }
  // The last window reaches the end of the text; the one before does not.
  EXPECT_EQ(windows.back().offsets[windows.back().size() - 2].end, 60);
}

TEST(PairWindows, StrideZeroGivesDisjointWindows) {
  const Tokenizer& tok = tiny_tokenizer();
  const auto windows = tok.encode_pair_windows("提示", kText, 25, 0);  // M = 20: 3 windows
  ASSERT_EQ(windows.size(), 3u);
  EXPECT_EQ(windows[1].offsets[4], (Offset{20, 21}));
  EXPECT_EQ(windows[2].offsets[4], (Offset{40, 41}));
}

TEST(PairWindows, Errors) {
  const Tokenizer& tok = tiny_tokenizer();
  // The hint (4 tokens) leaves no room: M = 7 - 3 - 4 = 0.
  EXPECT_THROW(tok.encode_pair_windows("[PREFIX][TYPE]人物", kText, 7, 0), Error);
  EXPECT_EQ(tok.encode_pair_windows("[PREFIX][TYPE]人物", kText, 8, 0).size(), 60u);  // M = 1
  // stride >= M once the text has to be cut (M = 20).
  EXPECT_THROW(tok.encode_pair_windows("提示", kText, 25, 20), Error);
  EXPECT_NO_THROW(tok.encode_pair_windows("提示", kText, 25, 19));
  EXPECT_THROW(tok.encode_pair_windows("提示", kText, 25, -1), Error);
  try {
    tok.encode_pair_windows("[PREFIX][TYPE]人物", kText, 7, 0);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
  }
  // Like HF, nothing is checked when no cut is needed.
  EXPECT_EQ(tok.encode_pair_windows("提示", "短", 8, 100).size(), 1u);
}

}  // namespace
}  // namespace rexnlu::text
