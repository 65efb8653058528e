// Position ids and the 2D mask against the original's build_position_ids_attn_mask outputs.
#include <gtest/gtest.h>

#include "fixtures.h"
#include "uie/prompt.h"

namespace rexnlu::uie {
namespace {

using testing::read_jsonl;
using testing::tiny_dir;

TEST(Prompt, PositionsAndMaskMatchTheForwardFixtures) {
  const auto cases = read_jsonl(tiny_dir() + "/forward_cases.jsonl");
  ASSERT_EQ(cases.size(), 24u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c["id"].get<std::string>());
    auto seq = make_sequence(c["input_ids"].get<std::vector<int32_t>>(), SpecialIds{});
    EXPECT_EQ(seq.position_ids, c["position_ids"].get<std::vector<int32_t>>());
    const auto rows = c["attention_mask"].get<std::vector<std::string>>();
    ASSERT_EQ(static_cast<int32_t>(rows.size()), seq.length());
    for (int32_t r = 0; r < seq.length(); ++r) {
      std::string got;
      for (int32_t col = 0; col < seq.length(); ++col) got += seq.mask[static_cast<size_t>(r) * seq.length() + col] ? '1' : '0';
      ASSERT_EQ(got, rows[r]) << "row " << r;
    }
  }
}

// Spec 5.5, RE level 1: two prefixes, the first with two types.
TEST(Prompt, TwoPrefixesAreIsolated) {
  // [CLS] [PREFIX] a a [TYPE] b [TYPE] c c [PREFIX] d [TYPE] e [SEP] x y [SEP]
  const int32_t P = 12800, T = 12801;
  auto seq = make_sequence({1, P, 10, 11, T, 12, T, 13, 14, P, 15, T, 16, 2, 20, 21, 2}, SpecialIds{});
  EXPECT_EQ(seq.position_ids, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 4, 5, 6, 1, 2, 3, 4, 7, 8, 9, 10}));
  const int32_t L = seq.length();
  auto m = [&](int r, int c) { return seq.mask[static_cast<size_t>(r) * L + c]; };
  EXPECT_EQ(m(1, 9), 0);   // prefix A does not see prefix B
  EXPECT_EQ(m(11, 4), 0);  // B's type does not see A's type
  EXPECT_EQ(m(4, 6), 0);   // sibling types of A
  EXPECT_EQ(m(6, 4), 0);
  EXPECT_EQ(m(4, 1), 1);   // a type sees its prefix
  EXPECT_EQ(m(1, 7), 1);   // a prefix sees its types
  for (int c = 0; c < L; ++c) EXPECT_EQ(m(14, c), 1);  // text sees everything
  for (int r = 0; r < L; ++r) EXPECT_EQ(m(r, 13), 1);  // everything sees [SEP]
}

}  // namespace
}  // namespace rexnlu::uie
