#include "uie/utf8.h"

#include "rexnlu/error.h"

namespace rexnlu::uie {

size_t count_code_points(std::string_view utf8) {
  size_t n = 0;
  for (unsigned char c : utf8) n += (c & 0xC0) != 0x80;
  return n;
}

std::u32string decode_utf8(std::string_view s, std::string_view what) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  auto bad = [&](size_t at) {
    return InputError(std::string(what) + " is not valid UTF-8 (byte offset " + std::to_string(at) + ")");
  };
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    char32_t cp;
    size_t len;
    if (c < 0x80) {
      cp = c, len = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      cp = c & 0x1F, len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      cp = c & 0x0F, len = 3;
    } else if (c >= 0xF0 && c <= 0xF4) {
      cp = c & 0x07, len = 4;
    } else {
      throw bad(i);
    }
    if (i + len > s.size()) throw bad(i);
    for (size_t k = 1; k < len; ++k) {
      const unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) throw bad(i);
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)) {
      throw bad(i);
    }
    out.push_back(cp);
    i += len;
  }
  return out;
}

std::string encode_utf8(std::u32string_view cps) {
  std::string out;
  out.reserve(cps.size() * 3);
  for (char32_t cp : cps) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return out;
}

namespace {
// Python's str.isspace(): Unicode White_Space plus the bidi separators U+001C..U+001F.
bool python_isspace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}
}  // namespace

std::string python_strip(std::string_view utf8) {
  std::u32string cps = decode_utf8(utf8, "type name");
  size_t b = 0, e = cps.size();
  while (b < e && python_isspace(cps[b])) ++b;
  while (e > b && python_isspace(cps[e - 1])) --e;
  return encode_utf8(std::u32string_view(cps).substr(b, e - b));
}

std::vector<int64_t> byte_offsets_of(std::u32string_view cps) {
  std::vector<int64_t> offs(cps.size() + 1, 0);
  int64_t pos = 0;
  for (size_t i = 0; i < cps.size(); ++i) {
    offs[i] = pos;
    const char32_t c = cps[i];
    pos += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
  }
  offs[cps.size()] = pos;
  return offs;
}

}  // namespace rexnlu::uie
