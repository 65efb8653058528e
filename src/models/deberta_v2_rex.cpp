#include "models/deberta_v2_rex.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/activations.h"
#include "kernels/conv1d.h"
#include "kernels/disentangled_attention.h"
#include "kernels/gemm.h"
#include "kernels/layer_norm.h"
#include "models/link_model.h"
#include "models/weight_loading.h"
#include "rexnlu/error.h"

namespace rexnlu::models {

namespace kc = kernels::cpu;

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw ModelError("config.json: unsupported for the RexUniNLU encoder: " + what);
}

}  // namespace

DebertaV2RexEncoder::DebertaV2RexEncoder(const io::ModelConfig& c, const io::TensorStore& w) {
  require(c.relative_attention, "relative_attention must be true");
  require(c.share_att_key, "share_att_key must be true");
  require(!c.position_biased_input, "position_biased_input must be false");
  require(c.type_vocab_size == 0, "type_vocab_size must be 0");
  require(c.pos_att_type == std::vector<std::string>{"c2p", "p2c"}, "pos_att_type must be c2p|p2c");
  require(c.norm_rel_ebd == "layer_norm", "norm_rel_ebd must be layer_norm");
  require(c.conv_kernel_size == 3, "conv_kernel_size must be 3");
  require(c.conv_act == "gelu" && c.hidden_act == "gelu", "hidden_act and conv_act must be gelu");
  // max_relative_positions < 1 means raw clamped relative positions; > 0 would switch on log
  // buckets (spec 3.2), which this encoder does not compute.
  require(c.max_relative_positions < 1, "max_relative_positions must be < 1 (no log buckets)");
  require(c.position_buckets > 0, "position_buckets must be > 0");
  require(c.hidden_size > 0 && c.num_attention_heads > 0 && c.hidden_size % c.num_attention_heads == 0,
          "hidden_size must be a positive multiple of num_attention_heads");
  require(c.num_hidden_layers > 0 && c.intermediate_size > 0, "layer count and intermediate_size must be > 0");

  hidden_ = c.hidden_size;
  heads_ = c.num_attention_heads;
  head_dim_ = c.head_dim();
  intermediate_ = c.intermediate_size;
  rel_rows_ = 2 * c.position_buckets;
  eps_ = c.layer_norm_eps;
  // scale_factor = 1 + |{c2p, p2c}| = 3, computed in float32 as torch does.
  scale_ = std::sqrt(static_cast<float>(head_dim_) * 3.0f);

  const int64_t H = hidden_, I = intermediate_;
  const std::string emb = "plm.embeddings.";
  vocab_rows_ = static_cast<int>(tensor_rows(w, emb + "word_embeddings.weight"));
  word_embeddings_ = load_f32(w, emb + "word_embeddings.weight", {vocab_rows_, H});
  emb_ln_gamma_ = load_f32(w, emb + "LayerNorm.weight", {H});
  emb_ln_beta_ = load_f32(w, emb + "LayerNorm.bias", {H});

  const std::string enc = "plm.encoder.";
  // R = LayerNorm(rel_embeddings) is the same for every layer and every input, so Qr and Kr
  // (query/key projections of R, bias included) are computed once here, not per forward.
  std::vector<float> rel = load_f32(w, enc + "rel_embeddings.weight", {rel_rows_, H});
  kc::layer_norm(rel.data(), nullptr, load_f32(w, enc + "LayerNorm.weight", {H}).data(),
                 load_f32(w, enc + "LayerNorm.bias", {H}).data(), eps_, rel_rows_, hidden_, rel.data());

  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = enc + "layer." + std::to_string(l) + ".";
    Layer L;
    const std::string self = p + "attention.self.";
    L.qkv_weight = concat(concat(load_f32(w, self + "query_proj.weight", {H, H}),
                                 load_f32(w, self + "key_proj.weight", {H, H})),
                          load_f32(w, self + "value_proj.weight", {H, H}));
    L.qkv_bias = concat(concat(load_f32(w, self + "query_proj.bias", {H}), load_f32(w, self + "key_proj.bias", {H})),
                        load_f32(w, self + "value_proj.bias", {H}));
    L.rel_qk.resize(static_cast<size_t>(rel_rows_) * 2 * hidden_);
    kc::linear(rel.data(), rel_rows_, hidden_, L.qkv_weight.data(), L.qkv_bias.data(), 2 * hidden_,
               L.rel_qk.data(), 2 * hidden_);
    L.attn_out_weight = load_f32(w, p + "attention.output.dense.weight", {H, H});
    L.attn_out_bias = load_f32(w, p + "attention.output.dense.bias", {H});
    L.attn_ln_gamma = load_f32(w, p + "attention.output.LayerNorm.weight", {H});
    L.attn_ln_beta = load_f32(w, p + "attention.output.LayerNorm.bias", {H});
    L.inter_weight = load_f32(w, p + "intermediate.dense.weight", {I, H});
    L.inter_bias = load_f32(w, p + "intermediate.dense.bias", {I});
    L.out_weight = load_f32(w, p + "output.dense.weight", {H, I});
    L.out_bias = load_f32(w, p + "output.dense.bias", {H});
    L.out_ln_gamma = load_f32(w, p + "output.LayerNorm.weight", {H});
    L.out_ln_beta = load_f32(w, p + "output.LayerNorm.bias", {H});
    layers_.push_back(std::move(L));
  }

  const std::vector<float> conv_w = load_f32(w, enc + "conv.conv.weight", {H, H, 3});
  conv_taps_ = kc::pack_conv1d_k3_weight(conv_w.data(), hidden_, hidden_);
  conv_bias_ = load_f32(w, enc + "conv.conv.bias", {H});
  conv_ln_gamma_ = load_f32(w, enc + "conv.LayerNorm.weight", {H});
  conv_ln_beta_ = load_f32(w, enc + "conv.LayerNorm.bias", {H});
}

void DebertaV2RexEncoder::forward(const PackedBatch& batch, float* h, Workspace& ws) const {
  const int T = batch.rows();
  const size_t H = static_cast<size_t>(hidden_);
  // Embeddings: word embedding + LayerNorm. No position or token-type embeddings, and the
  // Rex variant multiplies by a mask of ones (a no-op).
  float* emb = ws.alloc<float>(T * H);
  for (int t = 0; t < T; ++t)
    std::copy_n(word_embeddings_.data() + static_cast<size_t>(batch.ids[t]) * H, H, emb + t * H);
  kc::layer_norm(emb, nullptr, emb_ln_gamma_.data(), emb_ln_beta_.data(), eps_, T, hidden_, emb);

  // One attention scratch for every sequence of every layer.
  int max_len = 0;
  for (int b = 0; b < batch.num_sequences(); ++b) max_len = std::max(max_len, batch.length(b));
  const size_t scratch_floats = kc::disentangled_attention_scratch_floats(max_len, rel_rows_);
  float* scratch = ws.alloc<float>(scratch_floats);

  std::copy_n(emb, T * H, h);
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (forward_cancelled()) throw ForwardCancelled();  // the caller gave up (deadline, drain)
    run_layer(layers_[l], batch, h, scratch, scratch_floats, ws);
    if (l == 0) run_conv(batch, emb, h, ws);
  }
}

void DebertaV2RexEncoder::run_layer(const Layer& L, const PackedBatch& batch, float* h, float* attn_scratch,
                                    size_t attn_scratch_floats, Workspace& ws) const {
  const int T = batch.rows();
  const size_t H = static_cast<size_t>(hidden_);
  const Workspace::Frame frame(ws);  // this layer's buffers are free again for the next layer
  float* qkv = ws.alloc<float>(T * 3 * H);
  kc::linear(h, T, hidden_, L.qkv_weight.data(), L.qkv_bias.data(), 3 * hidden_, qkv, 3 * hidden_);

  float* ctx = ws.alloc<float>(T * H);
  for (int b = 0; b < batch.num_sequences(); ++b) {
    const size_t row0 = static_cast<size_t>(batch.offset(b));
    kc::DisentangledAttentionArgs a;
    a.length = batch.length(b);
    a.num_heads = heads_;
    a.head_dim = head_dim_;
    a.q = qkv + row0 * 3 * H;
    a.k = a.q + H;
    a.v = a.q + 2 * H;
    a.ld_qkv = 3 * hidden_;
    a.q_rel = L.rel_qk.data();
    a.k_rel = L.rel_qk.data() + H;
    a.ld_rel = 2 * hidden_;
    a.rel_rows = rel_rows_;
    a.position_ids = batch.position_ids.data() + row0;
    a.mask = batch.masks[b];
    a.scale = scale_;
    a.out = ctx + row0 * H;
    a.ld_out = hidden_;
    a.scratch = attn_scratch;
    a.scratch_floats = attn_scratch_floats;
    kc::disentangled_attention(a);
  }

  // a = LayerNorm(ctx Wo^T + bo + h), written over ctx.
  float* attn = ws.alloc<float>(T * H);
  kc::linear(ctx, T, hidden_, L.attn_out_weight.data(), L.attn_out_bias.data(), hidden_, attn, hidden_);
  kc::layer_norm(attn, h, L.attn_ln_gamma.data(), L.attn_ln_beta.data(), eps_, T, hidden_, attn);

  float* inter = ws.alloc<float>(T * static_cast<size_t>(intermediate_));
  kc::linear(attn, T, hidden_, L.inter_weight.data(), L.inter_bias.data(), intermediate_, inter, intermediate_);
  kc::gelu_erf(inter, T * static_cast<size_t>(intermediate_));
  kc::linear(inter, T, intermediate_, L.out_weight.data(), L.out_bias.data(), hidden_, h, hidden_);
  kc::layer_norm(h, attn, L.out_ln_gamma.data(), L.out_ln_beta.data(), eps_, T, hidden_, h);
}

void DebertaV2RexEncoder::run_conv(const PackedBatch& batch, const float* emb, float* h, Workspace& ws) const {
  const int T = batch.rows();
  const size_t H = static_cast<size_t>(hidden_);
  const Workspace::Frame frame(ws);
  float* conv = ws.alloc<float>(T * H);
  float* keep = ws.alloc<float>(T);  // input_mask per token: its column of the 2D mask has a 1
  for (int b = 0; b < batch.num_sequences(); ++b) {
    const size_t row0 = static_cast<size_t>(batch.offset(b));
    const int len = batch.length(b);
    // Per sequence, so the zero padding of the k=3 conv sits at the sequence's own ends.
    kc::conv1d_k3(emb + row0 * H, len, hidden_, conv_taps_.data(), conv_bias_.data(), hidden_, conv + row0 * H);
    const uint8_t* m = batch.masks[b];
    for (int j = 0; j < len; ++j) {
      bool any = false;
      for (int i = 0; i < len && !any; ++i) any = m[static_cast<size_t>(i) * len + j] != 0;
      keep[row0 + j] = any ? 1.0f : 0.0f;
    }
  }
  for (int t = 0; t < T; ++t)
    if (keep[t] == 0.0f) std::fill_n(conv + t * H, H, 0.0f);
  kc::gelu_erf(conv, T * H);
  // h = LayerNorm(h + gelu(conv)) * input_mask
  kc::layer_norm(h, conv, conv_ln_gamma_.data(), conv_ln_beta_.data(), eps_, T, hidden_, h);
  for (int t = 0; t < T; ++t)
    if (keep[t] == 0.0f) std::fill_n(h + t * H, H, 0.0f);
}

}  // namespace rexnlu::models
