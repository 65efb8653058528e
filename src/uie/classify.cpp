#include "uie/classify.h"

namespace rexnlu::uie {

double ClassPath::confidence_sum() const {
  double s = 0;  // Python's sum(): left to right from 0
  for (double c : confidences) s += c;
  return s;
}

void ChunkVotes::add(ClassPath path) {
  for (auto& occurrences : keys_) {
    if (occurrences.front().types == path.types) {
      occurrences.push_back(std::move(path));
      return;
    }
  }
  keys_.push_back({std::move(path)});
}

std::optional<ClassPath> ChunkVotes::best() const {
  if (keys_.empty()) return std::nullopt;
  if (keys_.size() == 1) return keys_.front().front();
  std::vector<ClassPath> means;
  for (const auto& occurrences : keys_) {
    ClassPath mean{occurrences.front().types, {}};
    size_t width = occurrences.front().confidences.size();
    for (const auto& o : occurrences) width = std::min(width, o.confidences.size());  // zip() truncates
    for (size_t i = 0; i < width; ++i) {
      double s = 0;
      for (const auto& o : occurrences) s += o.confidences[i];
      mean.confidences.push_back(s / static_cast<double>(occurrences.size()));
    }
    means.push_back(std::move(mean));
  }
  return best_by_sum(means);
}

std::vector<ClassPath> ChunkVotes::firsts() const {
  std::vector<ClassPath> out;
  for (const auto& occurrences : keys_) out.push_back(occurrences.front());
  return out;
}

std::optional<ClassPath> best_by_sum(const std::vector<ClassPath>& candidates) {
  if (candidates.empty()) return std::nullopt;
  size_t best = 0;
  for (size_t i = 1; i < candidates.size(); ++i) {
    if (candidates[i].confidence_sum() > candidates[best].confidence_sum()) best = i;
  }
  return candidates[best];
}

std::vector<ClassPath> final_selection(const std::vector<ClassPath>& paths, bool multi_label) {
  if (paths.empty()) return {};
  std::vector<double> means;
  for (const auto& p : paths) {
    means.push_back(p.confidences.empty() ? 0.0 : p.confidence_sum() / static_cast<double>(p.confidences.size()));
  }
  size_t argmax = 0;
  for (size_t i = 1; i < means.size(); ++i) {
    if (means[i] > means[argmax]) argmax = i;
  }
  if (!multi_label) return {paths[argmax]};
  std::vector<ClassPath> kept;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (means[i] > 0.9) kept.push_back(paths[i]);
  }
  if (kept.empty()) kept.push_back(paths[argmax]);
  return kept;
}

}  // namespace rexnlu::uie
