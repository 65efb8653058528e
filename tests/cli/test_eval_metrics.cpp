// rexnlu eval's metrics on hand-made gold / predicted sets, numbers computed by hand.
#include <gtest/gtest.h>

#include "eval_metrics.h"

namespace rexnlu::apps {
namespace {

EvalPath entity(const std::string& type, const std::string& span, int64_t s, int64_t e) { return {{type, span, s, e}}; }
EvalPath relation(const std::string& t1, const std::string& s1, int64_t a, int64_t b, const std::string& t2,
                  const std::string& s2, int64_t c, int64_t d) {
  return {{t1, s1, a, b}, {t2, s2, c, d}};
}

TEST(EvalMetrics, KindFollowsThePipelineMarkers) {
  EXPECT_EQ(task_kind_of("北京欢迎你"), TaskKind::kExtraction);
  EXPECT_EQ(task_kind_of("[CLASSIFY]很好"), TaskKind::kClassification);
  EXPECT_EQ(task_kind_of("[MULTICLASSIFY]很好"), TaskKind::kMultiLabel);
  EXPECT_EQ(task_kind_of("a[CLASSIFY][MULTICLASSIFY]"), TaskKind::kClassification);  // [CLASSIFY] wins, as in decode.py
}

TEST(EvalMetrics, ExtractionCountsSetsOfWholePaths) {
  EvalScorer scorer;
  // Sample 1: gold {张三 人物, 北京 地点, 北京 地点 (duplicate)}; predicted {张三 (same), 北京 with other
  // offsets, 上海 地点, 张三 again (duplicate)}. Sets: gold 2, predicted 3 -> tp 1, fp 2, fn 1.
  scorer.add("张三去了北京和上海",
             {entity("人物", "张三", 0, 2), entity("地点", "北京", 4, 6), entity("地点", "北京", 4, 6)},
             {entity("人物", "张三", 0, 2), entity("地点", "北京", 3, 6), entity("地点", "上海", 7, 9),
              entity("人物", "张三", 0, 2)});
  // Sample 2: no gold, one prediction -> fp 1. Sample 3: one gold, nothing predicted -> fn 1.
  scorer.add("今天天气很好", {}, {entity("人物", "天气", 2, 4)});
  scorer.add("李四", {entity("人物", "李四", 0, 2)}, {});
  // Sample 4: relation paths; the second item's offset differs in one prediction.
  scorer.add("A公司的CEO是王五",
             {relation("组织机构", "A公司", 0, 3, "高管(人物)", "王五", 8, 10)},
             {relation("组织机构", "A公司", 0, 3, "高管(人物)", "王五", 8, 10),
              relation("组织机构", "A公司", 0, 3, "高管(人物)", "王五", 7, 10)});
  const KindScore& s = scorer.scores().at(TaskKind::kExtraction);
  EXPECT_EQ(s.samples, 4);
  // tp: 张三, relation = 2; fp: 北京(3,6), 上海, 天气, relation(7,10) = 4; fn: 北京(4,6), 李四 = 2.
  EXPECT_EQ(s.total.tp, 2);
  EXPECT_EQ(s.total.fp, 4);
  EXPECT_EQ(s.total.fn, 2);
  EXPECT_DOUBLE_EQ(s.total.precision(), 2.0 / 6.0);
  EXPECT_DOUBLE_EQ(s.total.recall(), 2.0 / 4.0);
  EXPECT_DOUBLE_EQ(s.total.f1(), 2 * (1.0 / 3) * 0.5 / (1.0 / 3 + 0.5));  // = 0.4
  EXPECT_NEAR(s.total.f1(), 0.4, 1e-12);
  // Per type, by the last item's type.
  const Counts& person = s.per_type.at("人物");
  EXPECT_EQ(person.tp, 1);  // 张三
  EXPECT_EQ(person.fp, 1);  // 天气
  EXPECT_EQ(person.fn, 1);  // 李四
  const Counts& place = s.per_type.at("地点");
  EXPECT_EQ(place.tp, 0);
  EXPECT_EQ(place.fp, 2);
  EXPECT_EQ(place.fn, 1);
  EXPECT_DOUBLE_EQ(place.precision(), 0.0);
  EXPECT_DOUBLE_EQ(place.f1(), 0.0);
  const Counts& exec = s.per_type.at("高管(人物)");
  EXPECT_EQ(exec.tp, 1);
  EXPECT_EQ(exec.fp, 1);
  EXPECT_EQ(exec.fn, 0);
  EXPECT_DOUBLE_EQ(exec.f1(), 2 * 0.5 * 1.0 / 1.5);
  EXPECT_EQ(s.per_type.size(), 3u);
}

TEST(EvalMetrics, TextMatchIgnoresOffsets) {
  EvalScorer scorer(SpanMatch::kText);
  scorer.add("北京北京", {entity("地点", "北京", 0, 2)}, {entity("地点", "北京", 2, 4), entity("地点", "京北", 1, 3)});
  const KindScore& s = scorer.scores().at(TaskKind::kExtraction);
  EXPECT_EQ(s.total.tp, 1);
  EXPECT_EQ(s.total.fp, 1);
  EXPECT_EQ(s.total.fn, 0);
}

TEST(EvalMetrics, TypesAndSpansMustMatchToo) {
  EvalScorer scorer;
  scorer.add("张三", {entity("人物", "张三", 0, 2)}, {entity("地点", "张三", 0, 2), entity("人物", "张", 0, 2)});
  const KindScore& s = scorer.scores().at(TaskKind::kExtraction);
  EXPECT_EQ(s.total.tp, 0);
  EXPECT_EQ(s.total.fp, 2);
  EXPECT_EQ(s.total.fn, 1);
}

TEST(EvalMetrics, ClassificationAccuracyComparesFirstPathLabels) {
  const std::string t = "[CLASSIFY]很好用";
  EvalScorer scorer;
  scorer.add(t, {entity("正向", "[CLASSIFY]", 0, 10)}, {entity("正向", "[CLASSIFY]", 0, 10)});  // right
  scorer.add(t, {entity("正向", "[CLASSIFY]", 0, 10)}, {entity("负向", "[CLASSIFY]", 0, 10)});  // wrong
  scorer.add(t, {entity("负向", "[CLASSIFY]", 0, 10)}, {});                                    // nothing predicted
  scorer.add(t, {}, {entity("负向", "[CLASSIFY]", 0, 10)});                                    // no gold: never right
  // Only the label (last item's type) counts, not the span or offsets.
  scorer.add(t, {entity("负向", "[CLASSIFY]", 0, 10)}, {entity("负向", "x", 3, 4)});
  const KindScore& s = scorer.scores().at(TaskKind::kClassification);
  EXPECT_EQ(s.samples, 5);
  EXPECT_EQ(s.correct, 2);
  EXPECT_DOUBLE_EQ(s.accuracy(), 0.4);
  // Label rows: gold labels 正,正,负,-,负 vs predicted 正,负,-,负,负 -> tp 2, fp 2, fn 2.
  EXPECT_EQ(s.total.tp, 2);
  EXPECT_EQ(s.total.fp, 2);
  EXPECT_EQ(s.total.fn, 2);
  EXPECT_EQ(s.per_type.at("负向").tp, 1);
  EXPECT_EQ(s.per_type.at("负向").fp, 2);
  EXPECT_EQ(s.per_type.at("负向").fn, 1);
}

TEST(EvalMetrics, MultiLabelIsLabelMicroF1PlusExactMatch) {
  const std::string t = "[MULTICLASSIFY]案情";
  EvalScorer scorer;
  // gold {盗窃, 抢劫}, predicted {盗窃, 诈骗, 盗窃} -> tp 1, fp 1, fn 1, not exact.
  scorer.add(t, {entity("盗窃", t, 0, 15), entity("抢劫", t, 0, 15)},
             {entity("盗窃", t, 0, 15), entity("诈骗", t, 0, 15), entity("盗窃", t, 0, 15)});
  // gold {贪污}, predicted {贪污} -> tp 1, exact.
  scorer.add(t, {entity("贪污", t, 0, 15)}, {entity("贪污", t, 0, 15)});
  const KindScore& s = scorer.scores().at(TaskKind::kMultiLabel);
  EXPECT_EQ(s.total.tp, 2);
  EXPECT_EQ(s.total.fp, 1);
  EXPECT_EQ(s.total.fn, 1);
  EXPECT_DOUBLE_EQ(s.total.precision(), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(s.total.recall(), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(s.total.f1(), 2.0 / 3.0);
  EXPECT_EQ(s.correct, 1);
  EXPECT_DOUBLE_EQ(s.accuracy(), 0.5);
}

TEST(EvalMetrics, EmptyCountsAreZeroNotNan) {
  const Counts c;
  EXPECT_EQ(c.precision(), 0.0);
  EXPECT_EQ(c.recall(), 0.0);
  EXPECT_EQ(c.f1(), 0.0);
  EXPECT_EQ(KindScore().accuracy(), 0.0);
}

TEST(EvalMetrics, KindsOfAMixedFileAreScoredSeparately) {
  EvalScorer scorer;
  scorer.add("张三", {entity("人物", "张三", 0, 2)}, {entity("人物", "张三", 0, 2)});
  scorer.add("[CLASSIFY]好", {entity("正向", "[CLASSIFY]", 0, 10)}, {entity("正向", "[CLASSIFY]", 0, 10)});
  EXPECT_EQ(scorer.scores().size(), 2u);
  EXPECT_EQ(scorer.scores().at(TaskKind::kExtraction).samples, 1);
  EXPECT_EQ(scorer.scores().at(TaskKind::kClassification).correct, 1);
}

}  // namespace
}  // namespace rexnlu::apps
