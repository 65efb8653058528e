// RexUniNLU's token-pair scoring head (spec section 4): q = ffnq(h), k = ffnk(h), rotary over
// all dims with adjacent pairs at the custom position ids, Z = rope(q) · rope(k)^T, unscaled.
#pragma once

#include <vector>

#include "backends/backend.h"
#include "models/rex/rex_config.h"
#include "models/link_model.h"
#include "models/rex/packed_batch.h"
#include "models/weight_loader.h"
#include "tensor/tensor.h"

namespace rexnlu::models {

class RexLinkHead {
 public:
  // Declares ffnq.*, ffnk.* and rotary_emb.freqs (loaded, not recomputed: powf rounding may differ).
  RexLinkHead(const rex::ModelConfig& config, WeightLoader& weights);

  // hidden [batch.rows(), H] on the backend (F32 or the backend's activation type) -> per
  // sequence b what queries[b] asks of its L*L logit matrix, on the host (out is resized; the
  // scores: ops::link_scores). q|k, the rotary and the scores are fp32 (the q|k product reads
  // 16-bit hidden states and writes fp32). positions: the batch's position ids on the backend
  // (I32 [batch.rows()], as the encoder's forward returns them).
  void forward(backends::Backend& be, const PackedBatch& batch, ConstTensorRef hidden, ConstTensorRef positions,
               const std::vector<LinkQuery>& queries, std::vector<SequenceLinks>& out) const;

 private:
  int hidden_ = 0;
  Linear qk_;     // ffnq|ffnk fused: [2H, H]
  Tensor freqs_;  // [H/2]
};

}  // namespace rexnlu::models
