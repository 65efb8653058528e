// The RexUniNLU encoder: DeBERTa-v2 with the Rex changes (spec section 3): custom position ids
// for relative positions (clamped, never log-bucketed), a 2D attention mask per sequence,
// input_mask = column sums of that mask, and the conv layer after layer 0 fed with the
// embedding output. Written against src/ops only: it runs on whichever backend loaded it.
#pragma once

#include <vector>

#include "backends/backend.h"
#include "models/encoder_layer.h"
#include "models/rex/rex_config.h"
#include "models/rex/packed_batch.h"
#include "models/weight_loader.h"
#include "ops/conv1d.h"
#include "ops/packed_sequences.h"
#include "tensor/tensor.h"

namespace rexnlu::models {

class DebertaV2RexEncoder {
 public:
  // Declares its tensors (checkpoint names with the "plm." prefix) on `weights`;
  // `embedding_rows` is the tokenizer's vocabulary size, which the embedding table must match.
  DebertaV2RexEncoder(const rex::ModelConfig& config, WeightLoader& weights, int64_t embedding_rows);

  int hidden_size() const { return hidden_; }
  int vocab_rows() const { return vocab_rows_; }

  // Last hidden states of every token: hidden_out [batch.rows(), hidden_size()] on the backend, of
  // the backend's activation_type() (every activation of the pass is: 16-bit on the GPU at
  // fp16 / bf16). Scratch comes from the backend's workspace (the caller starts the pass).
  // Returns the batch's position ids as uploaded to the backend (I32 [batch.rows()], in the pass's
  // workspace): the link head turns q and k by them without a second upload.
  ConstTensorRef forward(backends::Backend& be, const PackedBatch& batch, TensorRef hidden_out) const;

 private:
  struct Layer {
    EncoderLayerWeights w;
    Tensor rel_qk;  // [rel_rows, 2H]: Qr|Kr = query/key_proj(R), constant (computed at load), activation type
  };

  // h <- the layer applied to x (x may be h: in place).
  void run_layer(backends::Backend& be, const Layer& layer, const ops::PackedSequences& seqs, ConstTensorRef positions,
                 ConstTensorRef x, TensorRef h) const;
  void run_conv(backends::Backend& be, const ops::PackedSequences& seqs, ConstTensorRef keep, ConstTensorRef emb,
                TensorRef h) const;
  // input_mask per token (host, [rows]): 1 where the token's column of its 2D mask has a 1.
  static std::vector<uint8_t> input_mask(const PackedBatch& batch);
  // The batch's masks as bits for a device (empty words for the CPU): mask b's L*L bits from bit
  // at[b] (a multiple of 64) of words, `bytes` bits (= bytes once unpacked) in all.
  struct MaskBits {
    std::vector<uint32_t> words;
    std::vector<int64_t> at;
    int64_t bytes = 0;
  };
  static MaskBits mask_bits(const backends::Backend& be, const PackedBatch& batch);

  int hidden_ = 0, heads_ = 0, intermediate_ = 0, rel_rows_ = 0, vocab_rows_ = 0;
  float scale_ = 1.0f;
  Tensor word_embeddings_;
  LayerNormWeights emb_ln_;
  std::vector<Layer> layers_;
  ops::Conv1dK3Weights conv_;
  LayerNormWeights conv_ln_;
};

}  // namespace rexnlu::models
