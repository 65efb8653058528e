#include "models/rex_link_head.h"

#include "kernels/gemm.h"
#include "kernels/rotary.h"
#include "models/weight_loading.h"
#include "rexnlu/error.h"

namespace rexnlu::models {

namespace kc = kernels::cpu;

RexLinkHead::RexLinkHead(const io::ModelConfig& c, const io::TensorStore& w) : hidden_(c.hidden_size) {
  if (hidden_ <= 0 || hidden_ % 2 != 0)
    throw ModelError("config.json: hidden_size must be even for the rotary head, got " + std::to_string(hidden_));
  const int64_t H = hidden_;
  qk_weight_ = concat(load_f32(w, "ffnq.weight", {H, H}), load_f32(w, "ffnk.weight", {H, H}));
  qk_bias_ = concat(load_f32(w, "ffnq.bias", {H}), load_f32(w, "ffnk.bias", {H}));
  freqs_ = load_f32(w, "rotary_emb.freqs", {H / 2});
}

void RexLinkHead::forward(const PackedBatch& batch, const float* hidden, std::vector<LinkLogits>& out,
                          Workspace& ws) const {
  const int T = batch.rows();
  const size_t ld = 2 * static_cast<size_t>(hidden_);
  float* qk = ws.alloc<float>(T * ld);  // row t: q_t | k_t
  kc::linear(hidden, T, hidden_, qk_weight_.data(), qk_bias_.data(), 2 * hidden_, qk, 2 * hidden_);
  kc::rotary_interleaved(qk, T, hidden_, 2 * hidden_, batch.position_ids.data(), freqs_.data());
  kc::rotary_interleaved(qk + hidden_, T, hidden_, 2 * hidden_, batch.position_ids.data(), freqs_.data());

  out.resize(batch.num_sequences());
  for (int b = 0; b < batch.num_sequences(); ++b) {
    const int L = batch.length(b);
    const float* q = qk + static_cast<size_t>(batch.offset(b)) * ld;
    out[b].resize(static_cast<size_t>(L) * L);
    kc::gemm(true, L, L, hidden_, 1.0f, q, 2 * hidden_, q + hidden_, 2 * hidden_, 0.0f, out[b].data(), L);
  }
}

}  // namespace rexnlu::models
