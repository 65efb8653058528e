// The pieces of SiameseUIE's BERT encoder, written against src/ops: the embeddings (word +
// absolute position + token type, LayerNorm) and a stack of post-LN BERT layers with plain
// scaled dot-product attention over each whole sequence. Sequences are packed back to back
// (rows [offsets[b], offsets[b+1])), as in the Rex encoder, so no sequence sees another's tokens.
#pragma once

#include <string>
#include <vector>

#include "backends/backend.h"
#include "models/encoder_layer.h"
#include "models/siamese_uie/siamese_config.h"
#include "models/weight_loader.h"
#include "ops/packed_sequences.h"
#include "tensor/tensor.h"

namespace rexnlu::models::siamese {

class BertEmbeddings {
 public:
  // Declares plm.embeddings.*; position + token-type rows are summed once at load into one table.
  BertEmbeddings(const SiameseConfig& config, WeightLoader& weights);

  // out [T, H] = LayerNorm(word[ids] + position[positions] + token_type[type]) for every token.
  // Ids, positions and the type were checked by the caller.
  void forward(backends::Backend& be, const std::vector<int32_t>& ids, const std::vector<int32_t>& positions,
               int type, TensorRef out) const;

  int vocab_rows() const { return vocab_rows_; }
  int max_positions() const { return max_positions_; }

 private:
  int hidden_ = 0, vocab_rows_ = 0, max_positions_ = 0;
  Tensor word_;
  Tensor position_type_;  // [types * positions, H]: row t * positions + p = position[p] + token_type[t]
  LayerNormWeights ln_;
};

class BertLayerStack {
 public:
  // Declares layers first..first+count-1 under `prefix` ("plm.encoder.layer." or
  // "crossattention.layer."), renumbered from 0 as the checkpoint stores them.
  BertLayerStack(const SiameseConfig& config, WeightLoader& weights, const std::string& prefix, int count);

  // h [offsets.back(), H] in place, each sequence attending to all of its own tokens: the packed
  // attention (one launch on a GPU) under all-ones masks, which go to the device once, with the
  // zero positions, before the layers; the layers then run as one Backend::run_recorded (a GPU
  // records them per shape and replays). Asks forward_cancelled() between layers.
  void forward(backends::Backend& be, const std::vector<int64_t>& offsets, TensorRef h) const;

 private:
  void run_layer(backends::Backend& be, const EncoderLayerWeights& layer, const ops::PackedSequences& seqs,
                 ConstTensorRef positions, TensorRef h) const;

  std::string prefix_;  // names this stack's recordings
  int hidden_ = 0, heads_ = 0, intermediate_ = 0;
  float scale_ = 1.0f;
  std::vector<EncoderLayerWeights> layers_;
  // The attention op computes DeBERTa's disentangled scores; with zero relative tables and equal
  // position ids its extra terms are exactly 0, which leaves BERT's Q·K / sqrt(head_dim).
  Tensor zero_rel_;  // [2, H]
};

}  // namespace rexnlu::models::siamese
