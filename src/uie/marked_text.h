// The request text as the decoder reads it. The original's classification path inserts the
// marker ("[CLASSIFY]") into its text string before every window j >= 1 (spec 7, "long texts"),
// and later windows, chunks and levels read and re-tokenize that mutated string. To reproduce
// its results without copying the text per window, the insertions are kept as a list and a
// window reads the text "after its first n insertions".
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rexnlu::uie {

class MarkedText {
 public:
  MarkedText() = default;
  MarkedText(std::shared_ptr<const std::u32string> base, std::u32string marker)
      : base_(std::move(base)), marker_(std::move(marker)) {}

  int insertions() const { return static_cast<int>(positions_.size()); }
  // Inserts the marker at `pos` (in the text after all current insertions, clamped to its end
  // like Python slicing) and returns the new insertion count.
  int insert(int64_t pos);
  void clear() { positions_.clear(); }

  // Views of the text after its first n insertions.
  int64_t size(int n) const;
  std::optional<char32_t> at(int64_t i, int n) const;          // nullopt past the end
  std::u32string slice(int64_t begin, int64_t end, int n) const;  // Python text[begin:end]
  std::u32string materialize(int n) const;

  const std::u32string& base() const { return *base_; }

 private:
  std::shared_ptr<const std::u32string> base_;
  std::u32string marker_;
  std::vector<int64_t> positions_;  // insertion k's position in the text after k insertions
};

}  // namespace rexnlu::uie
