#include "text/char_classes.h"

#include <utf8proc.h>

#include <algorithm>
#include <iterator>

namespace rexnlu::text {
namespace detail {
#include "text/unicode_tables.inc"
}  // namespace detail

namespace {

template <size_t N>
bool in_table(const CodePointRange (&table)[N], char32_t c) {
  const auto* it = std::upper_bound(std::begin(table), std::end(table), c,
                                    [](char32_t v, const CodePointRange& r) { return v < r.lo; });
  return it != std::begin(table) && c <= std::prev(it)->hi;
}

bool is_private_use(char32_t c) {
  return (c >= 0xE000 && c <= 0xF8FF) || (c >= 0xF0000 && c <= 0xFFFFD) ||
         (c >= 0x100000 && c <= 0x10FFFD);
}

// utf8proc knows Unicode 15; the tokenizer's NFD knows only 9.0.
bool unknown_to_nfd(char32_t c) { return c >= 0x300 && in_table(detail::kNfdUnknownIn9, c); }

}  // namespace

bool is_removed_by_clean_text_slow(char32_t c) {
  if (c <= 0x9F) return true;  // C1 controls
  if (c == 0xFFFD) return true;
  return is_private_use(c) || in_table(detail::kFormat8, c);
}

bool is_non_ascii_punctuation(char32_t c) {
  if (c >= 0x3400 && c <= 0x9FFF) return false;  // CJK ideographs: the bulk of the text
  return in_table(detail::kPunctuation8, c);
}

bool is_nonspacing_mark(char32_t c) { return c >= 0x300 && in_table(detail::kNonspacingMark8, c); }

uint8_t combining_class(char32_t c) {
  if (c < 0x300 || unknown_to_nfd(c)) return 0;
  return static_cast<uint8_t>(utf8proc_get_property(static_cast<utf8proc_int32_t>(c))->combining_class);
}

int canonical_decomposition(char32_t c, char32_t* out) {
  if (c < 0xC0 || unknown_to_nfd(c)) {
    out[0] = c;
    return 1;
  }
  utf8proc_int32_t buffer[kMaxDecomposition];
  const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(c), buffer,
                                                     kMaxDecomposition, UTF8PROC_DECOMPOSE, nullptr);
  if (n <= 0 || n > kMaxDecomposition) {  // cannot happen for valid scalars; keep c unchanged
    out[0] = c;
    return 1;
  }
  for (utf8proc_ssize_t i = 0; i < n; ++i) out[i] = static_cast<char32_t>(buffer[i]);
  return static_cast<int>(n);
}

int to_lowercase(char32_t c, char32_t* out) {
  if (c < 0x80) {
    out[0] = (c >= 'A' && c <= 'Z') ? c + 32 : c;
    return 1;
  }
  if (c == 0x130) {  // LATIN CAPITAL LETTER I WITH DOT ABOVE: the only multi-char lowercase
    out[0] = 'i';
    out[1] = 0x307;
    return 2;
  }
  out[0] = static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
  if (out[0] == c && c >= detail::kLowercaseAfter15[0][0]) {  // maybe a newer mapping
    const auto* it = std::lower_bound(std::begin(detail::kLowercaseAfter15), std::end(detail::kLowercaseAfter15), c,
                                      [](const char32_t(&pair)[2], char32_t v) { return pair[0] < v; });
    if (it != std::end(detail::kLowercaseAfter15) && (*it)[0] == c) out[0] = (*it)[1];
  }
  return 1;
}

}  // namespace rexnlu::text
