// Character classes of HF tokenizers' BERT normalizer and pre-tokenizer, with the Unicode
// versions of the Rust crates it is built with (see gen_unicode_tables.py):
//   categories (control, punctuation, Mn)  Unicode 8.0   (unicode_categories 0.1.1)
//   NFD decomposition and combining class  Unicode 9.0   (unicode-normalization-alignments)
//   whitespace, lowercase                  Rust std      (White_Space; simple lowercase of
//                                                         Unicode 17: utf8proc's (15) plus the
//                                                         newer mappings, and SpecialCasing's U+0130)
#pragma once

#include <cstdint>

namespace rexnlu::text {

struct CodePointRange {
  char32_t lo;
  char32_t hi;  // inclusive
};

// Rust char::is_whitespace (the Unicode White_Space property), which includes \t \n \r.
inline bool is_bert_whitespace(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// What the BERT "clean text" step drops: NUL, U+FFFD and "control" characters, which in HF
// tokenizers means Cc, Cf (Unicode 8.0) or Co, but not \t \n \r. Unassigned code points (Cn)
// are kept, despite the comment in the Rust source.
bool is_removed_by_clean_text_slow(char32_t c);
inline bool is_removed_by_clean_text(char32_t c) {
  if (c < 0x80) return (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F;
  if (c >= 0x3400 && c <= 0x9FFF) return false;  // CJK ideographs: the bulk of the text
  return is_removed_by_clean_text_slow(c);
}

// The CJK ideograph ranges of the Rust normalizer (2B920, not Python's 2B820, starts the
// range after Extension D).
inline bool is_cjk_ideograph(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// ASCII punctuation (which includes symbols such as $ + < = > ^ ` | ~) or category P*.
bool is_non_ascii_punctuation(char32_t c);
inline bool is_bert_punctuation(char32_t c) {
  if (c < 0x80) {
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
  }
  return is_non_ascii_punctuation(c);
}

// General category Mn (dropped after NFD when stripping accents).
bool is_nonspacing_mark(char32_t c);

// Canonical combining class (0 for starters and for characters newer than Unicode 9.0).
uint8_t combining_class(char32_t c);

// Writes the full canonical decomposition of c to out (at most kMaxDecomposition code points,
// c itself when it does not decompose) and returns its length.
inline constexpr int kMaxDecomposition = 4;
int canonical_decomposition(char32_t c, char32_t* out);

// Rust char::to_lowercase: writes 1 or 2 code points to out and returns the count.
inline constexpr int kMaxLowercase = 2;
int to_lowercase(char32_t c, char32_t* out);

}  // namespace rexnlu::text
