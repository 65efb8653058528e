// HF tokenizers' BertNormalizer (clean text, CJK padding, strip accents, lowercase) with the
// alignment of every output character to the original characters it came from.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace rexnlu::text {

struct NormalizerOptions {
  bool clean_text = true;
  bool handle_chinese_chars = true;
  bool strip_accents = true;
  bool lowercase = true;
};

// A normalized code point and the span [start, end) of original code points it aligns to.
// The span is one character, except for HF's "no previous character" case, where it is empty.
struct NormChar {
  char32_t cp;
  int32_t start;
  int32_t end;
};

class BertNormalizer {
 public:
  explicit BertNormalizer(NormalizerOptions options = {}) : options_(options) {}

  // Normalizes `text`, whose first code point is the original character number `origin`,
  // into `out` (replaced). `scratch` holds intermediate results; pass the same one again to
  // avoid allocations.
  struct Scratch;
  void normalize(std::span<const char32_t> text, int32_t origin, std::vector<NormChar>& out,
                 Scratch& scratch) const;

  const NormalizerOptions& options() const { return options_; }

 private:
  NormalizerOptions options_;
};

struct BertNormalizer::Scratch {
  std::vector<NormChar> buffer;
  struct Decomposed {
    uint8_t ccc;
    bool inserted;  // not the first code point of its character's decomposition
    char32_t cp;
  };
  std::vector<Decomposed> pending;
};

}  // namespace rexnlu::text
