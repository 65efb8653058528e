// The code-point helpers the pipeline needs on top of src/text's UTF-8 codec: results are in
// code points (Python str indices) like the original, and C/C++ callers may ask for byte offsets.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "text/utf8.h"

namespace rexnlu::uie {

using text::count_code_points;
using text::encode_utf8;

// Strict decoding (src/text). Throws rexnlu::Error (kInvalidInput) naming `what` (e.g. "text")
// and the byte offset of the first bad sequence.
std::u32string decode_utf8(std::string_view utf8, std::string_view what);

// Python's str.strip(): removes leading/trailing characters for which str.isspace() is true.
std::string python_strip(std::string_view utf8);

// byte_offsets[i] = UTF-8 byte offset of code point i, for i in [0, size] (size = total bytes).
std::vector<int64_t> byte_offsets_of(std::u32string_view code_points);

}  // namespace rexnlu::uie
