// RexUniNLU's token-pair scoring head (spec section 4): q = ffnq(h), k = ffnk(h), rotary over
// all dims with adjacent pairs at the custom position ids, Z = rope(q) · rope(k)^T, unscaled.
#pragma once

#include <vector>

#include "io/model_config.h"
#include "io/tensor_store.h"
#include "models/link_model.h"
#include "models/packed_batch.h"
#include "tensor/workspace.h"

namespace rexnlu::models {

class RexLinkHead {
 public:
  // Reads ffnq.*, ffnk.* and rotary_emb.freqs (loaded, not recomputed: powf rounding may differ).
  RexLinkHead(const io::ModelConfig& config, const io::TensorStore& weights);

  // hidden[batch.rows(), H] -> one L*L logit matrix per sequence (out is resized).
  void forward(const PackedBatch& batch, const float* hidden, std::vector<LinkLogits>& out,
               Workspace& ws) const;

 private:
  int hidden_ = 0;
  std::vector<float> qk_weight_, qk_bias_;  // ffnq|ffnk fused: [2H, H], [2H]
  std::vector<float> freqs_;                // [H/2]
};

}  // namespace rexnlu::models
