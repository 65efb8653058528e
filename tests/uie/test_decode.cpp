// Link decoding on hand-made logits (the way spec section 10 drove the original decoder).
#include <gtest/gtest.h>

#include <cmath>

#include <random>

#include "rexnlu/error.h"
#include "uie/decode.h"
#include "uie/utf8.h"

namespace rexnlu::uie {
namespace {

struct Window {
  int32_t L, H;
  std::vector<text::Offset> offsets;
  std::vector<int32_t> slots;
  std::vector<float> z;
  Window(int32_t l, int32_t h, std::vector<text::Offset> offs, std::vector<int32_t> type_tokens)
      : L(l), H(h), offsets(std::move(offs)), slots(std::move(type_tokens)), z(static_cast<size_t>(l) * l, -3.0f) {}
  void link(int32_t r, int32_t c, float v = 2.0f) { z[static_cast<size_t>(r) * L + c] = v; }
  void span(int32_t head, int32_t tail, int32_t type) { link(head, tail), link(head, type), link(type, tail); }
  // Decodes the dense Z, and checks that what a model returns for the pipeline's query gives the
  // same matches: the links alone (extraction) or the dense Z (classification; links alone refused).
  std::vector<Match> decode(const MarkedText& text, DecodeMode mode = DecodeMode::kExtract, float threshold = 0.0f,
                            size_t max_matches = SIZE_MAX) {
    WindowLayout w{L, H, &offsets, &slots, 0};
    std::vector<Match> dense = decode_window(z.data(), w, text, threshold, mode, max_matches);
    const bool extract = mode == DecodeMode::kExtract;
    const models::SequenceLinks links = models::SequenceLinks::from_dense(z, L, {threshold, !extract});
    EXPECT_EQ(links.dense.empty(), extract);
    expect_same(decode_window(links, w, text, threshold, mode, max_matches), dense);
    if (!extract) {
      models::SequenceLinks sparse = links;
      sparse.dense.clear();
      EXPECT_THROW(decode_window(sparse, w, text, threshold, mode, max_matches), Error);
    }
    return dense;
  }
  static void expect_same(const std::vector<Match>& got, const std::vector<Match>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].slot, want[i].slot) << i;
      EXPECT_EQ(got[i].start, want[i].start) << i;
      EXPECT_EQ(got[i].end, want[i].end) << i;
      EXPECT_EQ(got[i].span, want[i].span) << i;
      EXPECT_TRUE(got[i].probability == want[i].probability ||
                  (std::isnan(got[i].probability) && std::isnan(want[i].probability))) << i;
    }
  }
};

MarkedText text_of(const std::string& s) {
  return MarkedText(std::make_shared<const std::u32string>(decode_utf8(s, "t")), U"");
}

// [CLS] [PREFIX] [TYPE] 甲 [TYPE] 乙 [SEP] | a b c d [SEP]   (H = 7)
Window two_type_window() {
  std::vector<text::Offset> offs = {{0, 0}, {0, 8}, {8, 14}, {14, 15}, {15, 21}, {21, 22}, {0, 0},
                                    {0, 1}, {1, 2}, {3, 4}, {4, 5}, {0, 0}};
  return Window(12, 7, offs, {2, 4});
}

TEST(Decode, NeedsAllThreeLinks) {
  auto text = text_of("ab cd");
  Window w = two_type_window();
  w.span(7, 8, 2);     // "ab" as type 0
  w.link(9, 10);       // "cd" span link ...
  w.link(9, 4);        // ... and head->type 1, but no type 1 -> tail link
  auto m = w.decode(text);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].slot, 0);
  EXPECT_EQ(m[0].start, 0);
  EXPECT_EQ(m[0].end, 2);
  EXPECT_EQ(encode_utf8(m[0].span), "ab");
  EXPECT_NEAR(m[0].probability, 1.0 / (1.0 + std::exp(-2.0)), 1e-4);
}

TEST(Decode, OrderIsHeadThenTailThenHintOrder) {
  auto text = text_of("ab cd");
  Window w = two_type_window();
  w.span(9, 10, 4);
  w.span(9, 10, 2);
  w.span(7, 10, 4);
  w.span(7, 8, 4);
  auto m = w.decode(text);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(encode_utf8(m[0].span), "ab");     // head 7, tail 8
  EXPECT_EQ(encode_utf8(m[1].span), "ab cd");  // head 7, tail 10
  EXPECT_EQ(m[2].slot, 0);                     // head 9: type 0 before type 1 (hint order)
  EXPECT_EQ(m[3].slot, 1);
}

TEST(Decode, SkipsLeadingSpacesAndKeepsSpansEndingOnSep) {
  auto text = text_of("ab cd");
  Window w = two_type_window();
  w.offsets[9] = {2, 4};  // a token whose offset starts on a space
  w.span(9, 9, 2);
  w.span(10, 11, 2);      // tail on the final [SEP]: offset end 0, empty span, as the original
  auto m = w.decode(text);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].start, 3);
  EXPECT_EQ(encode_utf8(m[0].span), "c");
  EXPECT_EQ(m[1].start, 4);
  EXPECT_EQ(m[1].end, 0);
  EXPECT_EQ(m[1].span, U"");
}

TEST(Decode, TypeRowsAndColumnsOutsideTheHintAreNotTypes) {
  auto text = text_of("ab cd");
  Window w = two_type_window();
  w.link(7, 8);
  w.link(7, 9);   // a "type" link to a text token is not a type link
  w.link(9, 8);
  EXPECT_TRUE(w.decode(text).empty());
}

TEST(Decode, BlankModeScoresEveryTypeOnTheFirstTextToken) {
  auto text = text_of("[CLASSIFY]ab");
  std::vector<text::Offset> offs = {{0, 0}, {0, 8}, {8, 14}, {14, 15}, {15, 21}, {21, 22}, {0, 0}, {0, 10}, {10, 11}, {0, 0}};
  Window w(10, 7, offs, {2, 4});
  w.link(7, 7, 1.0f);
  w.link(2, 7, -1.0f);
  w.link(7, 2, 0.5f);
  auto m = w.decode(text, DecodeMode::kClassifyBlank);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(encode_utf8(m[0].span), "[CLASSIFY]");
  auto sig = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  EXPECT_NEAR(m[0].probability, (sig(1.0) + sig(-1.0) + sig(0.5)) / 3, 1e-4);
  EXPECT_NEAR(m[1].probability, (sig(1.0) + 2 * sig(-3.0)) / 3, 1e-4);
  EXPECT_TRUE(w.decode(text, DecodeMode::kClassify).empty());  // Z[T,c] < 0: no link
}

// Random windows with many links (several thresholds, budgets that stop the loop midway): the
// links alone give the dense Z's matches (Window::decode checks), incl. links below the diagonal
// and NaN cells, which never link.
TEST(Decode, LinksAloneGiveTheDenseMatchesOnRandomWindows) {
  auto text = text_of("abcdefghijklmnopqrstuvwxyz0123456789");
  std::mt19937 rng(7);
  std::normal_distribution<float> logit(-1.0f, 1.5f);
  size_t total = 0;
  for (int round = 0; round < 40; ++round) {
    const int32_t H = 6, L = H + 1 + static_cast<int32_t>(rng() % 30);
    std::vector<text::Offset> offs(L);
    for (int32_t t = H; t < L; ++t) offs[t] = {t - H, t - H + 1};
    Window w(L, H, offs, {1, 3, -1, 4});
    for (float& v : w.z) v = logit(rng);
    w.z[rng() % w.z.size()] = std::nanf("");
    for (const float t : {0.0f, 0.7f, -0.5f}) {
      total += w.decode(text, DecodeMode::kExtract, t).size();
      w.decode(text, DecodeMode::kExtract, t, 3);
      w.decode(text, DecodeMode::kClassify, t);
    }
    w.decode(text, DecodeMode::kClassifyBlank);
  }
  EXPECT_GT(total, 100u);  // the cases do link
}

// The links must hold everything above the decode's threshold and come in order.
TEST(Decode, LinksOfAHigherThresholdOrOutOfOrderAreRefused) {
  auto text = text_of("ab cd");
  Window w = two_type_window();
  w.span(7, 8, 2);
  WindowLayout layout{w.L, w.H, &w.offsets, &w.slots, 0};
  models::SequenceLinks links = models::SequenceLinks::from_dense(w.z, w.L, {0.5f, false});
  EXPECT_THROW(decode_window(links, layout, text, 0.0f, DecodeMode::kExtract), Error);
  EXPECT_EQ(decode_window(links, layout, text, 0.5f, DecodeMode::kExtract).size(), 1u);
  std::swap(links.links[0], links.links[1]);
  EXPECT_THROW(decode_window(links, layout, text, 0.5f, DecodeMode::kExtract), Error);
  links = models::SequenceLinks::from_dense(w.z, w.L, {0.0f, false});
  links.links.push_back(models::Link{w.L, 0, 5.0f});
  EXPECT_THROW(decode_window(links, layout, text, 0.0f, DecodeMode::kExtract), Error);
}

TEST(Decode, Round4IsPythonRound) {
  EXPECT_EQ(round4(0.12345678), 0.1235);
  EXPECT_EQ(round4(0.99996), 1.0);
  EXPECT_EQ(round4(0.5), 0.5);
}

TEST(MarkedText, ReadsTheTextAfterItsInsertions) {
  MarkedText t(std::make_shared<const std::u32string>(U"abcdef"), U"[M]");
  EXPECT_EQ(t.insert(2), 1);   // ab[M]cdef
  EXPECT_EQ(t.insert(8), 2);   // ab[M]cde[M]f
  EXPECT_EQ(t.materialize(2), U"ab[M]cde[M]f");
  EXPECT_EQ(t.slice(0, 100, 2), U"ab[M]cde[M]f");
  EXPECT_EQ(t.slice(4, 9, 1), U"]cdef");
  EXPECT_EQ(t.slice(5, 2, 2), U"");
  EXPECT_EQ(*t.at(8, 2), U'[');
  EXPECT_EQ(*t.at(11, 2), U'f');
  EXPECT_FALSE(t.at(12, 2).has_value());
  EXPECT_EQ(*t.at(8, 1), U'f');
}

}  // namespace
}  // namespace rexnlu::uie
