#include "models/rex/rex_link_head.h"

#include <vector>

#include "ops/link_scores.h"
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
                          ConstTensorRef positions, const std::vector<LinkQuery>& queries,
                          std::vector<SequenceLinks>& out) const {
  const int64_t T = batch.rows(), H = hidden_;
  const TensorRef qk = be.alloc(DType::kF32, {T, 2 * H});  // row t: q_t | k_t
  ops::linear(be, hidden, qk_, qk);
  ops::rotary_interleaved(be, qk, positions, freqs_);  // q and k, by the same angles

  // Every sequence's scores at once; only what each query asks comes back to the host.
  std::vector<ops::LinkScoresQuery> asked(queries.size());
  for (size_t b = 0; b < queries.size(); ++b) asked[b] = {queries[b].threshold, queries[b].dense};
  ops::LinkScores scores;
  ops::link_scores(be, batch.offsets, qk.columns(0, H), qk.columns(H, H), asked, scores);
  out.assign(batch.num_sequences(), SequenceLinks{});
  for (int b = 0; b < batch.num_sequences(); ++b) {
    const int64_t L = batch.length(b);
    out[b].length = static_cast<int32_t>(L);
    out[b].threshold = queries[b].threshold;
    if (const int64_t at = scores.dense_at[b]; at >= 0) out[b].dense.assign(scores.dense + at, scores.dense + at + L * L);
  }
  for (const ops::ScoreLink& l : scores.links) out[l.sequence].links.push_back(Link{l.row, l.col, l.logit});
}

}  // namespace rexnlu::models
