#include "eval_metrics.h"

#include <set>
#include <tuple>

namespace rexnlu::apps {
namespace {

// A path as compared: (type, span, start, end) per item; start = end = 0 under SpanMatch::kText.
using Key = std::vector<std::tuple<std::string, std::string, int64_t, int64_t>>;

Key key_of(const EvalPath& path, SpanMatch match) {
  Key key;
  for (const EvalItem& it : path) {
    if (match == SpanMatch::kOffsets) {
      key.emplace_back(it.type, it.span, it.start, it.end);
    } else {
      key.emplace_back(it.type, it.span, 0, 0);
    }
  }
  return key;
}

std::string last_type(const EvalPath& path) { return path.empty() ? std::string() : path.back().type; }

// Adds tp/fp/fn of two sets to `total` and to per_type[type_of(element)].
template <class T, class TypeOf>
void count_sets(const std::set<T>& gold, const std::set<T>& pred, KindScore& score, TypeOf type_of) {
  for (const T& g : gold) {
    Counts& c = score.per_type[type_of(g)];
    if (pred.count(g)) {
      ++c.tp;
      ++score.total.tp;
    } else {
      ++c.fn;
      ++score.total.fn;
    }
  }
  for (const T& p : pred) {
    if (gold.count(p)) continue;
    ++score.per_type[type_of(p)].fp;
    ++score.total.fp;
  }
}

}  // namespace

const char* task_kind_name(TaskKind kind) {
  switch (kind) {
    case TaskKind::kExtraction: return "extraction";
    case TaskKind::kClassification: return "classification";
    case TaskKind::kMultiLabel: return "multi-label";
  }
  return "?";
}

TaskKind task_kind_of(std::string_view text) {
  if (text.find("[CLASSIFY]") != std::string_view::npos) return TaskKind::kClassification;
  if (text.find("[MULTICLASSIFY]") != std::string_view::npos) return TaskKind::kMultiLabel;
  return TaskKind::kExtraction;
}

double Counts::precision() const { return tp + fp ? static_cast<double>(tp) / static_cast<double>(tp + fp) : 0.0; }
double Counts::recall() const { return tp + fn ? static_cast<double>(tp) / static_cast<double>(tp + fn) : 0.0; }
double Counts::f1() const {
  const double p = precision(), r = recall();
  return p + r > 0 ? 2 * p * r / (p + r) : 0.0;
}

void EvalScorer::add(std::string_view text, const std::vector<EvalPath>& gold, const std::vector<EvalPath>& predicted) {
  const TaskKind kind = task_kind_of(text);
  KindScore& score = scores_[kind];
  ++score.samples;
  if (kind == TaskKind::kExtraction) {
    std::set<Key> g, p;
    for (const EvalPath& path : gold) g.insert(key_of(path, match_));
    for (const EvalPath& path : predicted) p.insert(key_of(path, match_));
    count_sets(g, p, score, [](const Key& k) { return k.empty() ? std::string() : std::get<0>(k.back()); });
    return;
  }
  std::set<std::string> g, p;
  for (const EvalPath& path : gold) g.insert(last_type(path));
  for (const EvalPath& path : predicted) p.insert(last_type(path));
  count_sets(g, p, score, [](const std::string& label) { return label; });
  if (kind == TaskKind::kClassification) {
    // decode.py: gold = first gold path's label (none without gold), prediction = first path's.
    score.correct += !gold.empty() && !predicted.empty() && last_type(predicted.front()) == last_type(gold.front());
  } else {
    score.correct += g == p;
  }
}

}  // namespace rexnlu::apps
