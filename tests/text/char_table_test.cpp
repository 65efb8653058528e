// Every code point through each normalizer step and the pre-tokenizer, against what HF
// tokenizers 0.23.2 does with it (tests/data/text/hf_char_table.txt, see make_hf_cases.py).
// This pins the Unicode versions: categories of 8.0, NFD of 9.0, lowercase of 17.0.
#include <gtest/gtest.h>

#include <unordered_map>

#include "text/normalizer.h"
#include "text/pre_tokenizer.h"
#include "text/test_util.h"

namespace rexnlu::text {
namespace {

enum Flag : uint8_t { kRemoved = 1, kSpace = 2, kCjk = 4, kPunct = 8, kSplit = 16 };

struct CharTable {
  std::vector<uint8_t> flags = std::vector<uint8_t>(0x110000, 0);
  std::unordered_map<char32_t, std::vector<char32_t>> lower, strip;
};

CharTable read_table() {
  CharTable t;
  std::ifstream in(testing::test_data("text/hf_char_table.txt"));
  std::string line;
  const std::unordered_map<std::string, uint8_t> flag_of = {
      {"removed", kRemoved}, {"space", kSpace}, {"cjk", kCjk}, {"punct", kPunct}, {"split", kSplit}};
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string kind;
    s >> kind;
    unsigned long a = 0, b = 0;
    s >> std::hex >> a;
    if (auto it = flag_of.find(kind); it != flag_of.end()) {
      s >> b;
      for (unsigned long c = a; c <= b; ++c) t.flags[c] |= it->second;
    } else if (kind == "lower") {
      long delta = 0;
      s >> b >> std::dec >> delta;
      for (unsigned long c = a; c <= b; ++c) t.lower[char32_t(c)] = {char32_t(long(c) + delta)};
    } else if (kind == "lower1" || kind == "strip") {
      std::vector<char32_t> out;
      while (s >> b) out.push_back(char32_t(b));
      (kind == "strip" ? t.strip : t.lower)[char32_t(a)] = out;
    }
  }
  return t;
}

std::vector<char32_t> code_points(const std::vector<NormChar>& v) {
  std::vector<char32_t> out;
  for (const auto& nc : v) out.push_back(nc.cp);
  return out;
}

TEST(CharTable, EveryCodePointMatchesHf) {
  const CharTable table = read_table();
  ASSERT_GT(table.strip.size(), 3000u);
  ASSERT_GT(table.lower.size(), 1000u);
  auto only = [](bool clean, bool cjk, bool strip, bool lower) {
    return BertNormalizer(NormalizerOptions{clean, cjk, strip, lower});
  };
  const BertNormalizer clean = only(true, false, false, false), cjk = only(false, true, false, false),
                       strip = only(false, false, true, false), lower = only(false, false, false, true);
  BertNormalizer::Scratch scratch;
  std::vector<NormChar> out;
  size_t failures = 0;
  auto check = [&](bool ok, char32_t c, const char* what) {
    if (ok) return;
    if (++failures <= 20) ADD_FAILURE() << what << " differs for U+" << std::hex << uint32_t(c);
  };
  for (char32_t c = 0; c <= 0x10FFFF; ++c) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    const char32_t one[1] = {c};
    const uint8_t f = table.flags[c];
    clean.normalize(one, 0, out, scratch);
    check(out.empty() == bool(f & kRemoved), c, "clean-text removal");
    check((out.size() == 1 && out[0].cp == ' ' && c != ' ') == bool(f & kSpace), c, "clean-text whitespace");
    cjk.normalize(one, 0, out, scratch);
    check((out.size() == 3) == bool(f & kCjk), c, "CJK padding");
    if (!(c >= 0xAC00 && c <= 0xD7A3)) {
      strip.normalize(one, 0, out, scratch);
      const auto it = table.strip.find(c);
      check(code_points(out) == (it == table.strip.end() ? std::vector<char32_t>{c} : it->second), c, "strip accents");
    }
    lower.normalize(one, 0, out, scratch);
    const auto lt = table.lower.find(c);
    check(code_points(out) == (lt == table.lower.end() ? std::vector<char32_t>{c} : lt->second), c, "lowercase");
    const std::vector<NormChar> abc = {{'a', 0, 1}, {c, 1, 2}, {'b', 2, 3}};
    int pieces = 0;
    for_each_pre_token(std::span<const NormChar>(abc), [&](auto) { ++pieces; });
    check((pieces == 3) == bool(f & kPunct), c, "punctuation");
    check((pieces == 2) == bool(f & kSplit), c, "pre-tokenizer whitespace");
  }
  EXPECT_EQ(failures, 0u);
}

}  // namespace
}  // namespace rexnlu::text
