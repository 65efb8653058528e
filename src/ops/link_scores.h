// The link head's token-pair scores (spec section 4): Z_b = q_b · k_b^T (fp32, unscaled) for every
// sequence b of a packed batch, brought back to the host only as far as decoding reads them: the
// links above each sequence's threshold and, for the sequences that ask, the whole Z_b.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "backends/backend.h"

namespace rexnlu::ops {

struct LinkScoresQuery {
  float threshold = std::numeric_limits<float>::infinity();  // the links: every Z_b[i, j] > threshold
  bool dense = false;                                         // and the whole Z_b
};

struct ScoreLink {
  int32_t sequence = 0, row = 0, col = 0;
  float logit = 0.0f;
};

struct LinkScores {
  std::vector<ScoreLink> links;  // by sequence, row, column; NaN never links
  // The asked Z_b (L_b x L_b row-major) start at dense + dense_at[b] (-1: not asked); host memory
  // valid until the backend's next begin_pass().
  const float* dense = nullptr;
  std::vector<int64_t> dense_at;
};

// q, k: F32 [rows, dim] on the backend, one row stride; sequence b owns rows
// [offsets[b], offsets[b+1]). queries: one per sequence.
// CPU: every Z_b by ops::gemm (the bits of one product per sequence), links picked from them.
// CUDA: every Z_b in ONE launch (backends::cuda::link_scores), which appends the links above the
// lowest threshold to a device buffer of link_capacity(cells) links; only they and the asked Z_b
// are copied back. More links than that would take more bytes than the scores (a link is 16
// bytes, a score 4): then every Z_b is copied back and the links picked from it on the host
// (nothing is dropped, nothing rerun). Z_b may differ from the CPU's in the last bits (another
// summation order).
void link_scores(backends::Backend& be, const std::vector<int64_t>& offsets, ConstTensorRef q, ConstTensorRef k,
                 const std::vector<LinkScoresQuery>& queries, LinkScores& out);

// The links the CUDA path copies back for `cells` scores (sum of L_b^2): a quarter of the cells.
int64_t link_capacity(int64_t cells);

}  // namespace rexnlu::ops
