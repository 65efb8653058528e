#include "models/rex/rex_link_head.h"

#include "ops/linear.h"
#include "ops/rotary.h"
#include "rexnlu/error.h"

namespace rexnlu::models {

RexLinkHead::RexLinkHead(const rex::ModelConfig& c, WeightLoader& w) : hidden_(c.hidden_size) {
  if (hidden_ <= 0 || hidden_ % 2 != 0)
    throw ModelError("config.json: hidden_size must be even for the rotary head, got " + std::to_string(hidden_));
  const int64_t H = hidden_;
  qk_ = w.linear({"ffnq", "ffnk"}, H, H);
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

  out.resize(batch.num_sequences());
  for (int b = 0; b < batch.num_sequences(); ++b) {
    const int64_t L = batch.length(b);
    const TensorRef seq = qk.slice(batch.offset(b), L);
    out[b].resize(static_cast<size_t>(L * L));
    const TensorRef host = host_ref(out[b].data(), {L, L});
    const TensorRef z = be.output_for(host);
    ops::gemm(be, seq.columns(0, H), seq.columns(H, H), true, 1.0f, 0.0f, z);
    be.download(z, host);
  }
}

}  // namespace rexnlu::models
