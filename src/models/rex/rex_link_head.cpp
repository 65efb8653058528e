#include "models/rex/rex_link_head.h"

#include <vector>

#include "ops/linear.h"
#include "ops/rotary.h"
#include "rexnlu/error.h"

namespace rexnlu::models {

RexLinkHead::RexLinkHead(const rex::ModelConfig& c, WeightLoader& w) : hidden_(c.hidden_size) {
  if (hidden_ <= 0 || hidden_ % 2 != 0)
    throw ModelError("config.json: hidden_size must be even for the rotary head, got " + std::to_string(hidden_));
  const int64_t H = hidden_;
  qk_ = w.linear({"ffnq", "ffnk"}, H, H, LinearRole::kLinkHead);
  freqs_ = w.tensor("rotary_emb.freqs", {H / 2});
}

void RexLinkHead::forward(backends::Backend& be, const PackedBatch& batch, ConstTensorRef hidden,
                          std::vector<LinkLogits>& out) const {
  const int64_t T = batch.rows(), H = hidden_;
  const ConstTensorRef positions = be.upload(host_ref(batch.position_ids.data(), {T}));
  const TensorRef qk = be.alloc(DType::kF32, {T, 2 * H});  // row t: q_t | k_t
  ops::linear(be, hidden, qk_, qk);
  ops::rotary_interleaved(be, qk.columns(0, H), positions, freqs_);
  ops::rotary_interleaved(be, qk.columns(H, H), positions, freqs_);

  // Every sequence's L x L block into one buffer, copied back once (one wait for the device, not
  // one per sequence; on the CPU the products write the staging buffer directly; on CUDA it is
  // page-locked, so the copy is one DMA).
  int64_t total = 0;
  for (int b = 0; b < batch.num_sequences(); ++b) total += int64_t{batch.length(b)} * batch.length(b);
  float* staging = static_cast<float*>(be.host_scratch(static_cast<size_t>(total) * sizeof(float)));
  const TensorRef host = host_ref(staging, {total});
  const TensorRef z = be.output_for(host);
  int64_t at = 0;
  for (int b = 0; b < batch.num_sequences(); ++b) {
    const int64_t L = batch.length(b);
    const TensorRef seq = qk.slice(batch.offset(b), L);
    const TensorRef zb(z.data + at * static_cast<int64_t>(sizeof(float)), DType::kF32, {L, L}, z.device);
    ops::gemm(be, seq.columns(0, H), seq.columns(H, H), true, 1.0f, 0.0f, zb);
    at += L * L;
  }
  be.download(z, host);
  out.resize(batch.num_sequences());
  at = 0;
  for (int b = 0; b < batch.num_sequences(); ++b) {
    const int64_t n = int64_t{batch.length(b)} * batch.length(b);
    out[b].assign(staging + at, staging + at + n);
    at += n;
  }
}

}  // namespace rexnlu::models
