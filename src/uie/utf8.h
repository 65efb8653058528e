// The few UTF-8 / code-point helpers the pipeline needs: results are in code points (Python str
// indices) like the original, and C/C++ callers may ask for byte offsets.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rexnlu::uie {

size_t count_code_points(std::string_view utf8);  // counts lead bytes; input assumed valid

// Strict decoder (no overlongs, no surrogates, <= U+10FFFF). Throws rexnlu::Error
// (kInvalidInput) naming `what` and the byte offset of the first bad sequence.
std::u32string decode_utf8(std::string_view utf8, std::string_view what);

std::string encode_utf8(std::u32string_view code_points);

// Python's str.strip(): removes leading/trailing characters for which str.isspace() is true.
std::string python_strip(std::string_view utf8);

// byte_offsets[i] = UTF-8 byte offset of code point i, for i in [0, size] (size = total bytes).
std::vector<int64_t> byte_offsets_of(std::u32string_view code_points);

}  // namespace rexnlu::uie
