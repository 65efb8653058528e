// The parts of a post-LN transformer encoder layer that BERT (siamese_uie/bert_encoder.cpp) and the
// Rex DeBERTa-v2 (rex/deberta_v2_rex.cpp) share: the weights as both checkpoints store them, the
// fused query|key|value projection, and the block after the attention
//   a = LayerNorm(ctx Wo^T + bo + h);  h = LayerNorm(gelu(a Wi^T + bi) Wout^T + bout + a).
// The attention itself differs per family and stays with it.
#pragma once

#include <string>

#include "backends/backend.h"
#include "models/weight_loader.h"
#include "tensor/tensor.h"

namespace rexnlu::models {

struct EncoderLayerWeights {
  Linear qkv;        // query|key|value fused: [3H, H]
  Linear attn_out;   // [H, H]
  LayerNormWeights attn_ln;
  Linear inter;      // [I, H]
  Linear out;        // [H, I]
  LayerNormWeights out_ln;
};

// Declares the layer under `prefix` ("plm.encoder.layer.3."): the projections
// prefix + "attention.self." + {q, k, v} (BERT: query/key/value, DeBERTa-v2: query_proj/...),
// attention.output.{dense,LayerNorm}, intermediate.dense and output.{dense,LayerNorm}.
EncoderLayerWeights declare_encoder_layer(WeightLoader& w, const std::string& prefix, const std::string& q,
                                          const std::string& k, const std::string& v, int64_t hidden,
                                          int64_t intermediate, float eps);

// The activations (h, ctx and what these allocate) are all of h's dtype: F32, or the backend's
// activation type where the network keeps them in it (the Rex encoder).
// qkv [T, 3H] = h Wqkv^T + bqkv, from the backend's workspace (the caller holds the frame).
TensorRef project_qkv(backends::Backend& be, const EncoderLayerWeights& layer, ConstTensorRef h);

// h [T, H] <- the block after the attention, from the attention's context ctx [T, H] and the
// layer's input x [T, H] (read before h is written: x may be h, the layer in place, or another
// buffer the caller still needs, as the Rex encoder's embeddings). Scratch from the backend's
// workspace (the caller holds the frame).
void attention_output_and_ffn(backends::Backend& be, const EncoderLayerWeights& layer, ConstTensorRef ctx,
                              ConstTensorRef x, TensorRef h);
// The same in place: the layer's input is h.
inline void attention_output_and_ffn(backends::Backend& be, const EncoderLayerWeights& layer, ConstTensorRef ctx,
                                     TensorRef h) {
  attention_output_and_ffn(be, layer, ctx, h, h);
}

}  // namespace rexnlu::models
