// What Engine::extract returns: paths of typed spans from the schema's root to a leaf.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rexnlu/error.h"

namespace rexnlu {

struct Span {
  std::string type;
  std::string span;             // UTF-8 text of [start, end); "[CLASSIFY]" etc. for classification
  int64_t start = 0, end = 0;   // code points (or bytes with Options::byte_offsets); end < start can
                                // occur when the model links a span to the final [SEP], as in the original
  double probability = 0;       // mean of the three link probabilities (classification: the confidence)
};

using Path = std::vector<Span>;

struct Result {
  std::vector<Path> paths;
  std::vector<std::string> warnings;  // e.g. a type name longer than 125 tokens was skipped
  std::string error;                  // extract_batch only: why this request failed (empty = ok)
  ErrorKind error_kind = ErrorKind::kInvalidInput;
  bool with_probabilities = true;     // copied from the request's options, for to_json()

  bool ok() const { return error.empty(); }
  // {"output": [[{"type", "span", "offset": [s, e], "probability"}...]...], "warnings": [...]}
  // (the original's shape plus probability and warnings), or {"error": "..."}.
  std::string to_json() const;
};

}  // namespace rexnlu
