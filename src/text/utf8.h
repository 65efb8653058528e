// Strict UTF-8 decoding and encoding (the tokenizer works on code points).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rexnlu::text {

// Appends the code points of `utf8` to `out`. Throws rexnlu::Error (kInvalidInput) naming the
// byte offset of the first ill-formed sequence (stray continuation byte, truncated or overlong
// sequence, surrogate, value above U+10FFFF).
void decode_utf8(std::string_view utf8, std::vector<char32_t>& out);
void decode_utf8(std::string_view utf8, std::u32string& out);

// Code points of UTF-8 text already known to be valid (counts lead bytes).
size_t count_code_points(std::string_view valid_utf8);

// Appends the UTF-8 encoding of `cp` (a valid scalar value) to `out`.
inline void append_utf8(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// UTF-8 of a sequence of valid scalar values.
inline std::string encode_utf8(std::u32string_view code_points) {
  std::string out;
  out.reserve(code_points.size() * 3);
  for (char32_t cp : code_points) append_utf8(cp, out);
  return out;
}

}  // namespace rexnlu::text
