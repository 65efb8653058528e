// Per-request options of rexnlu::Engine, and the limits an operator puts on every request.
// Defaults reproduce the original RexUniNLU pipeline, except `dedup` (see docs/options.md).
#pragma once

#include <cstdint>

namespace rexnlu {

// Set by the caller per request. A value outside its range is an InputError naming the option and
// the value (nothing is clamped): see docs/options.md.
struct Options {
  float link_threshold = 0.0f;  // a token link holds iff its logit is > this (0 = probability 0.5); -20..20
  int max_len = 512;            // tokens per sequence ([CLS] hint [SEP] text window [SEP]), 8..512
  int stride = 32;              // overlap of consecutive text windows, in tokens, 0..max_len-1 (extraction
                                // only; classification always uses 0 like the original)
  int hint_max_len = 256;       // tokens per hint chunk, [CLS] and [SEP] included, 4..max_len-2
  // SiameseUIE models: a start/end token holds iff its pointer logit is > this (the original's 0.5);
  // -20..20. RexUniNLU models use link_threshold instead.
  float pointer_threshold = 0.5f;
  bool dedup = true;            // drop repeated identical paths (overlapping windows); the original keeps them
  bool probabilities = true;    // report each item's probability in JSON output
  bool byte_offsets = false;    // offsets in UTF-8 bytes instead of code points
  // Upper bound on the sum of L*L over the sequences of one forward call: bounds the memory of
  // masks and logits (5 bytes per cell) for huge texts. One sequence always fits. 1..kMaxBatchCells.
  int64_t max_batch_cells = int64_t{16} * 512 * 512;
};

// The largest max_batch_cells a request may ask for (64 sequences of 512 tokens: 84 MB of masks
// and logits).
inline constexpr int64_t kMaxBatchCells = int64_t{64} * 512 * 512;
inline constexpr float kMaxLinkThreshold = 20.0f;  // |link_threshold| at most (probability 2e-9 .. 1 - 2e-9)

// Bounds on the work and output of ONE request (one text), set by whoever runs the engine (the CLI's
// and the server's --max-* flags), never by the request. Exceeding one fails that request with
// ErrorKind::kLimitExceeded naming the limit and the value; the others in a batch are unaffected.
struct Limits {
  int64_t max_text_bytes = 100000;    // UTF-8 bytes of the text (after a task built it)
  int64_t max_schema_types = 2000;    // type names in the schema, all levels together (total nodes)
  int max_schema_depth = 8;           // levels of the schema (each level is one more round of model calls); 1..8
  int64_t max_paths = 10000;          // spans found (output paths and next-level prefixes, all levels)
  int64_t max_output_bytes = 4 << 20; // UTF-8 bytes of the types and spans of those paths
  int64_t max_sequences = 4096;       // prompt sequences run through the model (chunks x windows x levels)
};

}  // namespace rexnlu
