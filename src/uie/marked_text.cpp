#include "uie/marked_text.h"

#include <algorithm>

namespace rexnlu::uie {

int MarkedText::insert(int64_t pos) {
  const int n = insertions();
  positions_.push_back(std::clamp<int64_t>(pos, 0, size(n)));
  return n + 1;
}

int64_t MarkedText::size(int n) const {
  return static_cast<int64_t>(base_->size()) + static_cast<int64_t>(n) * static_cast<int64_t>(marker_.size());
}

std::optional<char32_t> MarkedText::at(int64_t i, int n) const {
  if (i < 0 || i >= size(n)) return std::nullopt;
  const auto m = static_cast<int64_t>(marker_.size());
  for (int k = n - 1; k >= 0; --k) {  // undo insertions, newest first
    const int64_t p = positions_[k];
    if (i < p) continue;
    if (i < p + m) return marker_[static_cast<size_t>(i - p)];
    i -= m;
  }
  return (*base_)[static_cast<size_t>(i)];
}

std::u32string MarkedText::slice(int64_t begin, int64_t end, int n) const {
  const int64_t len = size(n);
  begin = std::clamp<int64_t>(begin, 0, len);
  end = std::clamp<int64_t>(end, 0, len);
  std::u32string out;
  if (n == 0) {
    if (begin < end) out = base_->substr(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
    return out;
  }
  for (int64_t i = begin; i < end; ++i) out.push_back(*at(i, n));
  return out;
}

std::u32string MarkedText::materialize(int n) const {
  std::u32string text = *base_;
  for (int k = 0; k < n; ++k) text.insert(static_cast<size_t>(positions_[k]), marker_);
  return text;
}

}  // namespace rexnlu::uie
