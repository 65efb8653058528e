// The RexUniNLU encoder: DeBERTa-v2 with the Rex changes (spec section 3): custom position ids
// for relative positions (clamped, never log-bucketed), a 2D attention mask per sequence,
// input_mask = column sums of that mask, and the conv layer after layer 0 fed with the
// embedding output.
#pragma once

#include <vector>

#include "io/model_config.h"
#include "io/tensor_store.h"
#include "models/packed_batch.h"
#include "tensor/workspace.h"

namespace rexnlu::models {

class DebertaV2RexEncoder {
 public:
  // Copies (and fuses) the weights it needs from `weights` (checkpoint names with the "plm."
  // prefix); throws rexnlu::Error (kInvalidModel) on a missing tensor, a wrong shape, or a
  // config this implementation does not compute (e.g. log-bucketed relative positions).
  DebertaV2RexEncoder(const io::ModelConfig& config, const io::TensorStore& weights);

  int hidden_size() const { return hidden_; }
  int vocab_rows() const { return vocab_rows_; }

  // Last hidden states of every token: hidden_out[batch.rows(), hidden_size()].
  // Scratch comes from `ws` (the caller resets it between passes).
  void forward(const PackedBatch& batch, float* hidden_out, Workspace& ws) const;

 private:
  struct Layer {
    std::vector<float> qkv_weight, qkv_bias;  // query|key|value fused: [3H, H], [3H]
    std::vector<float> rel_qk;                // [rel_rows, 2H]: Qr|Kr = query/key_proj(R), constant
    std::vector<float> attn_out_weight, attn_out_bias, attn_ln_gamma, attn_ln_beta;
    std::vector<float> inter_weight, inter_bias;  // [I, H], [I]
    std::vector<float> out_weight, out_bias, out_ln_gamma, out_ln_beta;
  };

  void run_layer(const Layer& layer, const PackedBatch& batch, float* h, float* attn_scratch,
                 size_t attn_scratch_floats, Workspace& ws) const;
  void run_conv(const PackedBatch& batch, const float* emb, float* h, Workspace& ws) const;

  int hidden_ = 0, heads_ = 0, head_dim_ = 0, intermediate_ = 0, rel_rows_ = 0, vocab_rows_ = 0;
  float eps_ = 1e-7f;
  float scale_ = 1.0f;
  std::vector<float> word_embeddings_, emb_ln_gamma_, emb_ln_beta_;
  std::vector<Layer> layers_;
  std::vector<float> conv_taps_, conv_bias_, conv_ln_gamma_, conv_ln_beta_;
};

}  // namespace rexnlu::models
