// Selection rules of the classification path (spec 7): per-chunk votes, the best candidate of a
// level, and the final single-label / multi-label filter of prediction_step.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace rexnlu::uie {

// A label path: its types from root to leaf and the confidence of each.
struct ClassPath {
  std::vector<std::string> types;
  std::vector<double> confidences;
  double confidence_sum() const;
};

// pred_info of one hint chunk: every candidate path found in its windows, grouped by types.
class ChunkVotes {
 public:
  void add(ClassPath path);
  bool empty() const { return keys_.empty(); }
  void clear() { keys_.clear(); }
  // [CLASSIFY]: the chunk's best key. One key: its first occurrence. Several: per key the mean of
  // each item over occurrences; the key with the largest sum wins (first on ties).
  std::optional<ClassPath> best() const;
  // [MULTICLASSIFY]: every key with the confidences of its first occurrence.
  std::vector<ClassPath> firsts() const;

 private:
  std::vector<std::vector<ClassPath>> keys_;  // occurrences per key, keys in first-seen order
};

// The candidate with the largest confidence sum (first on ties), as sorted(..., reverse=True)[0].
std::optional<ClassPath> best_by_sum(const std::vector<ClassPath>& candidates);

// prediction_step: single label keeps the path of highest mean confidence; multi-label keeps the
// paths whose mean is > 0.9, or else the argmax.
std::vector<ClassPath> final_selection(const std::vector<ClassPath>& paths, bool multi_label);

}  // namespace rexnlu::uie
