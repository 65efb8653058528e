#include <gtest/gtest.h>

#include "uie/hints.h"
#include "uie/utf8.h"

namespace rexnlu::uie {
namespace {

// Every code point one token: true for the CJK names used here.
int count_cps(std::string_view s) { return static_cast<int>(count_code_points(s)); }

TEST(Hints, LevelZeroSortsTypesByCodePoint) {
  Schema s = Schema::parse(R"j({"组织机构": null, "人物": null, "地理位置": null})j");
  std::vector<std::string> warnings;
  auto chunks = split_hints({LevelEntry{}}, s, count_cps, HintLimits{}, warnings);
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].text, "[PREFIX][TYPE]人物[TYPE]地理位置[TYPE]组织机构");  // spec 5.1
  ASSERT_EQ(chunks[0].slots.size(), 3u);
  EXPECT_EQ(chunks[0].slots[0].char_pos, 8);
  EXPECT_EQ(chunks[0].slots[1].char_pos, 16);
  EXPECT_EQ(chunks[0].slots[2].char_pos, 26);
  EXPECT_TRUE(warnings.empty());
}

TEST(Hints, LevelOnePrefixesInDiscoveryOrder) {
  Schema s = Schema::parse(
      R"j({"人物": {"毕业院校(组织机构)": null, "任职于(组织机构)": null}, "组织机构": {"简称(组织机构)": null}})j");
  const int person = s.node(Schema::kRoot).children[0], org = s.node(Schema::kRoot).children[1];
  std::vector<LevelEntry> entries = {
      LevelEntry{{PrefixItem{"人物", "谷口清太郎", 18, 23, {}, 0}}, person},
      LevelEntry{{PrefixItem{"组织机构", "北大", 8, 10, {}, 0}}, org},
  };
  std::vector<std::string> warnings;
  auto chunks = split_hints(entries, s, count_cps, HintLimits{}, warnings);
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].text,
            "[PREFIX]人物: 谷口清太郎[TYPE]任职于(组织机构)[TYPE]毕业院校(组织机构)[PREFIX]组织机构: 北大[TYPE]简称(组织机构)");
  ASSERT_EQ(chunks[0].slots.size(), 3u);
  EXPECT_EQ(chunks[0].slots[2].entry, 1);
}

TEST(Hints, ChunksAtHintMaxLenAndRepeatsThePrefix) {
  Schema s = Schema::parse(R"j({"甲": {"子一": null, "子二": null, "子三": null}})j");
  const int a = s.node(Schema::kRoot).children[0];
  std::vector<LevelEntry> entries = {LevelEntry{{PrefixItem{"甲", "乙", 0, 1, {}, 0}}, a}};
  HintLimits limits;
  // n = 2 + lp (4+1) + 3 = 10; a second type gives 13; limit 12 -> one type per chunk.
  limits.hint_max_len = 12;
  std::vector<std::string> warnings;
  auto chunks = split_hints(entries, s, count_cps, limits, warnings);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0].text, "[PREFIX]甲: 乙[TYPE]子一");
  EXPECT_EQ(chunks[1].text, "[PREFIX]甲: 乙[TYPE]子三");
  EXPECT_EQ(chunks[2].text, "[PREFIX]甲: 乙[TYPE]子二");
}

TEST(Hints, SkipsOverlongTypesWithAWarning) {
  std::string long_type(130, 'x');  // counted as 130 "tokens" here
  Schema s = Schema::parse("{\"" + long_type + "\": null, \"短\": null}");
  std::vector<std::string> warnings;
  auto chunks = split_hints({LevelEntry{}}, s, count_cps, HintLimits{}, warnings);
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].text, "[PREFIX][TYPE]短");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("skipped"), std::string::npos);
}

}  // namespace
}  // namespace rexnlu::uie
