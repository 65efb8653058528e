#include "text/normalizer.h"

#include <algorithm>

#include "text/char_classes.h"

namespace rexnlu::text {
namespace {

// Characters no later step changes: ASCII apart from capitals, and the two big CJK blocks
// (3400..9FFF: no decomposition, no combining class, not Mn, no case).
bool is_inert_for_nfd_and_lowercase(char32_t c) {
  return (c < 0x80 && !(c >= 'A' && c <= 'Z')) || (c >= 0x3400 && c <= 0x9FFF);
}

void clean_and_pad_cjk(std::span<const char32_t> text, int32_t origin, const NormalizerOptions& o,
                       std::vector<NormChar>& out) {
  out.clear();
  for (size_t i = 0; i < text.size(); ++i) {
    char32_t c = text[i];
    const int32_t start = origin + static_cast<int32_t>(i);
    if (o.clean_text) {
      if (is_removed_by_clean_text(c)) continue;
      if (is_bert_whitespace(c)) c = ' ';
    }
    if (o.handle_chinese_chars && is_cjk_ideograph(c)) {
      out.push_back({' ', start, start + 1});
      out.push_back({c, start, start + 1});
      out.push_back({' ', start, start + 1});
    } else {
      out.push_back({c, start, start + 1});
    }
  }
}

// NFD followed by dropping Mn. Alignments follow HF's NormalizedString::transform: the first
// code point of a character's decomposition takes the alignment of the next original
// character in sequence, the others the alignment of the character before it. Canonical
// reordering can move code points across characters, so this is replayed, not assumed.
void strip_accents(const std::vector<NormChar>& in, int32_t origin, std::vector<NormChar>& out,
                   std::vector<BertNormalizer::Scratch::Decomposed>& pending) {
  out.clear();
  pending.clear();
  size_t cursor = 0;  // next original character consumed by a non-inserted code point
  auto emit_pending = [&] {
    if (pending.size() > 1) {
      std::stable_sort(pending.begin(), pending.end(),
                       [](const auto& a, const auto& b) { return a.ccc < b.ccc; });
    }
    for (const auto& d : pending) {
      NormChar aligned{d.cp, origin, origin};
      if (d.inserted) {
        if (cursor > 0) aligned.start = in[cursor - 1].start, aligned.end = in[cursor - 1].end;
      } else {
        aligned.start = in[cursor].start, aligned.end = in[cursor].end;
        ++cursor;
      }
      if (!is_nonspacing_mark(d.cp)) out.push_back(aligned);
    }
    pending.clear();
  };
  for (const NormChar& nc : in) {
    if (is_inert_for_nfd_and_lowercase(nc.cp) || (nc.cp >= 'A' && nc.cp <= 'Z')) {
      if (!pending.empty()) emit_pending();
      out.push_back(nc);
      ++cursor;
      continue;
    }
    char32_t parts[kMaxDecomposition];
    const int n = canonical_decomposition(nc.cp, parts);
    for (int k = 0; k < n; ++k) {
      const uint8_t ccc = combining_class(parts[k]);
      if (ccc == 0) emit_pending();  // a starter closes the run of marks to reorder
      pending.push_back({ccc, k > 0, parts[k]});
    }
  }
  emit_pending();
}

void lowercase(const std::vector<NormChar>& in, std::vector<NormChar>& out) {
  out.clear();
  for (const NormChar& nc : in) {
    if (is_inert_for_nfd_and_lowercase(nc.cp)) {
      out.push_back(nc);
      continue;
    }
    char32_t lower[kMaxLowercase];
    const int n = to_lowercase(nc.cp, lower);
    for (int k = 0; k < n; ++k) out.push_back({lower[k], nc.start, nc.end});
  }
}

}  // namespace

void BertNormalizer::normalize(std::span<const char32_t> text, int32_t origin,
                               std::vector<NormChar>& out, Scratch& scratch) const {
  // Each step reads one buffer and writes the other; `out` ends up with the result.
  std::vector<NormChar>* cur = &out;
  std::vector<NormChar>* next = &scratch.buffer;
  clean_and_pad_cjk(text, origin, options_, *cur);
  if (options_.strip_accents) {
    strip_accents(*cur, origin, *next, scratch.pending);
    std::swap(cur, next);
  }
  if (options_.lowercase) {
    lowercase(*cur, *next);
    std::swap(cur, next);
  }
  if (cur != &out) out.swap(*cur);
}

}  // namespace rexnlu::text
