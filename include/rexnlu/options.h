// Per-request options of rexnlu::Engine. Defaults reproduce the original RexUniNLU pipeline,
// except `dedup` (see docs/options.md).
#pragma once

#include <cstdint>

namespace rexnlu {

struct Options {
  float link_threshold = 0.0f;  // a token link holds iff its logit is > this (0 = probability 0.5)
  int max_len = 512;            // tokens per sequence ([CLS] hint [SEP] text window [SEP]), 8..512
  int stride = 32;              // overlap of consecutive text windows, in tokens (extraction only;
                                // classification always uses 0 like the original)
  int hint_max_len = 256;       // tokens per hint chunk, [CLS] and [SEP] included
  bool dedup = true;            // drop repeated identical paths (overlapping windows); the original keeps them
  bool probabilities = true;    // report each item's probability in JSON output
  bool byte_offsets = false;    // offsets in UTF-8 bytes instead of code points
  // Upper bound on the sum of L*L over the sequences of one forward call: bounds the memory of
  // masks and logits (5 bytes per cell) for huge texts. One sequence always fits.
  int64_t max_batch_cells = int64_t{16} * 512 * 512;
};

}  // namespace rexnlu
