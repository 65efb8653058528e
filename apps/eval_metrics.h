// The metrics of `rexnlu eval`, defined exactly as tools/train/decode.py::score (the PyTorch
// evaluation the demo model's numbers come from), so both report the same numbers:
//   extraction: per sample, the SET of predicted paths vs the set of gold paths, a path being the
//     tuple of (type, span, [start, end)) of all its items (SpanMatch::kText: (type, span) only);
//     tp = |gold ∩ pred|, fp = |pred \ gold|, fn = |gold \ pred|, summed over samples (micro).
//     Duplicate paths count once.
//   classification ([CLASSIFY] in the text): accuracy = the last type of the first predicted path
//     equals the last type of the first gold path.
//   multi-label ([MULTICLASSIFY]): micro P/R/F1 of the set of predicted labels (last type of each
//     path) vs the gold label set.
// Additions (not in decode.py, they do not change the numbers above): per-type P/R/F1 keyed by
// the last item's type, label P/R/F1 for single-label files, exact-match accuracy for multi-label.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace rexnlu::apps {

struct EvalItem {
  std::string type, span;
  int64_t start = 0, end = 0;  // code points
};
using EvalPath = std::vector<EvalItem>;

enum class TaskKind { kExtraction, kClassification, kMultiLabel };
const char* task_kind_name(TaskKind kind);  // "extraction", "classification", "multi-label"

// As the pipeline decides it: "[CLASSIFY]" anywhere in the text, else "[MULTICLASSIFY]", else extraction.
TaskKind task_kind_of(std::string_view text);

enum class SpanMatch { kOffsets, kText };

struct Counts {
  int64_t tp = 0, fp = 0, fn = 0;
  double precision() const;  // 0 when nothing was predicted
  double recall() const;     // 0 when there is no gold
  double f1() const;         // 0 when precision + recall is 0
};

struct KindScore {
  int64_t samples = 0;
  int64_t correct = 0;  // classification: right label; multi-label: label set == gold set
  Counts total;         // extraction: paths; classification / multi-label: labels
  std::map<std::string, Counts> per_type;  // by the last item's type
  double accuracy() const { return samples ? static_cast<double>(correct) / static_cast<double>(samples) : 0.0; }
};

class EvalScorer {
 public:
  explicit EvalScorer(SpanMatch match = SpanMatch::kOffsets) : match_(match) {}
  // One sample: its text (which decides the kind), gold paths and predicted paths.
  void add(std::string_view text, const std::vector<EvalPath>& gold, const std::vector<EvalPath>& predicted);
  const std::map<TaskKind, KindScore>& scores() const { return scores_; }

 private:
  SpanMatch match_;
  std::map<TaskKind, KindScore> scores_;
};

}  // namespace rexnlu::apps
