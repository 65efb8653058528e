#include "models/encoder_layer.h"

#include "ops/layer_norm.h"
#include "ops/linear.h"

namespace rexnlu::models {

EncoderLayerWeights declare_encoder_layer(WeightLoader& w, const std::string& p, const std::string& q,
                                          const std::string& k, const std::string& v, int64_t H, int64_t I,
                                          float eps) {
  const std::string self = p + "attention.self.";
  EncoderLayerWeights L;
  L.qkv = w.linear({self + q, self + k, self + v}, H, H);
  L.attn_out = w.linear({p + "attention.output.dense"}, H, H, LinearRole::kAttentionOutput);
  L.attn_ln = w.layer_norm(p + "attention.output.LayerNorm", H, eps);
  L.inter = w.linear({p + "intermediate.dense"}, I, H);
  L.out = w.linear({p + "output.dense"}, H, I, LinearRole::kFfnOutput);
  L.out_ln = w.layer_norm(p + "output.LayerNorm", H, eps);
  return L;
}

TensorRef project_qkv(backends::Backend& be, const EncoderLayerWeights& L, ConstTensorRef h) {
  const TensorRef qkv = be.alloc(h.dtype, {h.rows(), L.qkv.out_features()});
  ops::linear(be, h, L.qkv, qkv);
  return qkv;
}

void attention_output_and_ffn(backends::Backend& be, const EncoderLayerWeights& L, ConstTensorRef ctx, ConstTensorRef x,
                              TensorRef h) {
  const int64_t T = h.rows();
  const TensorRef attn = be.alloc(h.dtype, {T, h.cols()});
  ops::linear(be, ctx, L.attn_out, attn);
  ops::layer_norm(be, attn, x, L.attn_ln, attn);  // x's last read: h may be x
  const TensorRef inter = be.alloc(h.dtype, {T, L.inter.out_features()});
  ops::linear(be, attn, L.inter, inter, ops::Activation::kGeluErf);
  ops::linear(be, inter, L.out, h);
  ops::layer_norm(be, h, attn, L.out_ln, h);
}

}  // namespace rexnlu::models
