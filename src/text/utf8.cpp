#include "text/utf8.h"

#include <cstdint>

#include "rexnlu/error.h"

namespace rexnlu::text {
namespace {

[[noreturn]] void throw_invalid(size_t offset, const char* what) {
  throw InputError("invalid UTF-8 at byte offset " + std::to_string(offset) + ": " + what);
}

bool is_continuation(uint8_t b) { return (b & 0xC0) == 0x80; }

// One decoder for both output containers.
template <typename CodePoints>
void decode_into(std::string_view utf8, CodePoints& out) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(utf8.data());
  const size_t n = utf8.size();
  size_t i = 0;
  while (i < n) {
    const uint8_t b0 = bytes[i];
    if (b0 < 0x80) {  // ASCII runs dominate most text: no branches beyond this one
      out.push_back(b0);
      ++i;
      continue;
    }
    size_t len = 0;
    char32_t cp = 0;
    char32_t min_cp = 0;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      len = 2, cp = b0 & 0x1F, min_cp = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
      len = 3, cp = b0 & 0x0F, min_cp = 0x800;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      len = 4, cp = b0 & 0x07, min_cp = 0x10000;
    } else if (is_continuation(b0)) {
      throw_invalid(i, "unexpected continuation byte");
    } else {
      throw_invalid(i, "invalid lead byte");
    }
    if (i + len > n) throw_invalid(i, "truncated sequence");
    for (size_t k = 1; k < len; ++k) {
      const uint8_t b = bytes[i + k];
      if (!is_continuation(b)) throw_invalid(i, "truncated sequence");
      cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < min_cp) throw_invalid(i, "overlong encoding");
    if (cp >= 0xD800 && cp <= 0xDFFF) throw_invalid(i, "encoded surrogate");
    if (cp > 0x10FFFF) throw_invalid(i, "code point above U+10FFFF");
    out.push_back(cp);
    i += len;
  }
}

}  // namespace

void decode_utf8(std::string_view utf8, std::vector<char32_t>& out) { decode_into(utf8, out); }
void decode_utf8(std::string_view utf8, std::u32string& out) { decode_into(utf8, out); }

size_t count_code_points(std::string_view valid_utf8) {
  size_t n = 0;
  for (unsigned char c : valid_utf8) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace rexnlu::text
