#include "uie/utf8.h"

#include "rexnlu/error.h"

namespace rexnlu::uie {

std::u32string decode_utf8(std::string_view utf8, std::string_view what) {
  std::u32string out;
  out.reserve(utf8.size());
  try {
    text::decode_utf8(utf8, out);
  } catch (const Error& e) {
    throw InputError(std::string(what) + ": " + e.what());
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
