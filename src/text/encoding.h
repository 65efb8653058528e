// Token sequences produced by the tokenizer (ids, code-point offsets, type ids).
#pragma once

#include <cstdint>
#include <vector>

namespace rexnlu::text {

// [start, end) in Unicode code points of the string the token came from.
struct Offset {
  int32_t start = 0;
  int32_t end = 0;
  bool operator==(const Offset&) const = default;
};

// A token sequence. For pair encodings the offsets of each token refer to its own input
// (hint or text), exactly as HF tokenizers report them; special tokens added by the
// template ([CLS], [SEP]) have offset {0, 0}.
struct Encoding {
  std::vector<int32_t> ids;
  std::vector<Offset> offsets;
  std::vector<int8_t> type_ids;  // 0 for the first sequence, 1 for the second

  size_t size() const { return ids.size(); }
};

}  // namespace rexnlu::text
