#include "models/siamese_uie/bert_encoder.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "models/link_model.h"
#include "ops/activations.h"
#include "ops/attention.h"
#include "ops/layer_norm.h"
#include "ops/linear.h"
#include "ops/tensor_ops.h"

namespace rexnlu::models::siamese {

BertEmbeddings::BertEmbeddings(const SiameseConfig& c, WeightLoader& w)
    : hidden_(c.hidden_size), vocab_rows_(c.vocab_size), max_positions_(c.max_position_embeddings) {
  const int64_t H = hidden_, P = max_positions_, types = c.type_vocab_size;
  const std::string emb = "plm.embeddings.";
  word_ = w.tensor(emb + "word_embeddings.weight", {c.vocab_size, H},
                   "config.json vocab_size = " + std::to_string(c.vocab_size) + " tokens");
  const float* pos = w.host_f32(emb + "position_embeddings.weight", {P, H});
  const float* type = w.host_f32(emb + "token_type_embeddings.weight", {types, H});
  ln_ = w.layer_norm(emb + "LayerNorm", H, c.layer_norm_eps);
  w.known_unused(emb + "position_ids");  // a buffer some transformers versions save
  if (!pos || !type) return;
  std::vector<float> table(static_cast<size_t>(types * P * H));
  for (int64_t t = 0; t < types; ++t)
    for (int64_t p = 0; p < P; ++p)
      for (int64_t k = 0; k < H; ++k)
        table[static_cast<size_t>((t * P + p) * H + k)] = pos[p * H + k] + type[t * H + k];
  position_type_ = w.backend().copy_of(host_ref(table.data(), {types * P, H}));
}

void BertEmbeddings::forward(backends::Backend& be, const std::vector<int32_t>& ids,
                             const std::vector<int32_t>& positions, int type, TensorRef out) const {
  const auto T = static_cast<int64_t>(ids.size());
  std::vector<int32_t> rows(positions.size());
  for (size_t t = 0; t < rows.size(); ++t) rows[t] = type * max_positions_ + positions[t];
  const Workspace::Frame frame(be.workspace());
  const TensorRef extra = be.alloc(DType::kF32, {T, hidden_});
  ops::embedding(be, position_type_, be.upload(host_ref(rows.data(), {T})), extra);
  // out = LayerNorm(word[ids] + extra): the word rows gathered by the layer norm itself.
  ops::layer_norm(be, word_, extra, ln_, out, {.x_rows = be.upload(host_ref(ids.data(), {T}))});
}

BertLayerStack::BertLayerStack(const SiameseConfig& c, WeightLoader& w, const std::string& prefix, int count)
    : prefix_(prefix), hidden_(c.hidden_size), heads_(c.num_attention_heads), intermediate_(c.intermediate_size) {
  scale_ = std::sqrt(static_cast<float>(c.head_dim()));
  const int64_t H = hidden_, I = intermediate_;
  const float eps = c.layer_norm_eps;
  for (int l = 0; l < count; ++l) {
    layers_.push_back(
        declare_encoder_layer(w, prefix + std::to_string(l) + ".", "query", "key", "value", H, I, eps));
  }
  const std::vector<float> zeros(static_cast<size_t>(2 * H), 0.0f);
  zero_rel_ = w.backend().copy_of(host_ref(zeros.data(), {2, H}));
}

void BertLayerStack::forward(backends::Backend& be, const std::vector<int64_t>& offsets, TensorRef h) const {
  const int64_t T = offsets.back();
  const size_t B = offsets.size() - 1;
  // Plain BERT attention: every sequence sees all of its tokens, and equal (zero) positions leave
  // the disentangled terms at exactly 0. Masks and positions go up in one copy (upload_all may
  // refer to these vectors on the CPU: they live through the layers).
  int64_t cells = 0;
  for (size_t b = 0; b < B; ++b) cells += (offsets[b + 1] - offsets[b]) * (offsets[b + 1] - offsets[b]);
  const std::vector<uint8_t> ones(static_cast<size_t>(cells), 1);
  const std::vector<int32_t> zeros(static_cast<size_t>(T), 0);
  std::vector<ConstTensorRef> inputs = {host_ref(zeros.data(), {T})};
  int64_t at = 0;
  for (size_t b = 0; b < B; ++b) {
    const int64_t L = offsets[b + 1] - offsets[b];
    inputs.push_back(host_ref(ones.data() + at, {L, L}));
    at += L * L;
  }
  const std::vector<ConstTensorRef> uploaded = be.upload_all(inputs);
  const ops::PackedSequences seqs =
      ops::pack_sequences(be, offsets, std::vector<ConstTensorRef>(uploaded.begin() + 1, uploaded.end()));
  // The recording's key names the lengths and every address the layers read or write outside
  // their own scratch (h, the uploads; where the pass has allocated up to, which the layers'
  // scratch follows): in SiameseUIE's forward, earlier stages of the pass decide them.
  const void* top = [&] {
    const Workspace::Frame probe(be.workspace());
    return static_cast<const void*>(be.workspace().alloc<std::byte>(1));
  }();
  std::string key = "bert " + prefix_;
  for (size_t b = 0; b < B; ++b) key += ' ' + std::to_string(offsets[b + 1] - offsets[b]);
  for (const void* p : {static_cast<const void*>(h.data), static_cast<const void*>(uploaded[0].data),
                        static_cast<const void*>(seqs.device_offsets.data), top})
    key += ' ' + std::to_string(reinterpret_cast<uintptr_t>(p));
  if (forward_cancelled()) throw ForwardCancelled();  // a replay runs no check inside
  be.run_recorded(key, [&] {
    for (const EncoderLayerWeights& layer : layers_) {
      // The caller gave up (deadline, drain): checked between layers when the pass runs here.
      if (forward_cancelled()) throw ForwardCancelled();
      run_layer(be, layer, seqs, uploaded[0], h);
    }
  });
}

void BertLayerStack::run_layer(backends::Backend& be, const EncoderLayerWeights& L, const ops::PackedSequences& seqs,
                               ConstTensorRef positions, TensorRef h) const {
  const int64_t T = seqs.rows(), H = hidden_;
  const Workspace::Frame frame(be.workspace());  // this layer's buffers are free again for the next layer
  const TensorRef qkv = project_qkv(be, L, h);
  const TensorRef ctx = be.alloc(DType::kF32, {T, H});
  ops::DisentangledAttention a;  // every sequence of the batch at once
  a.num_heads = heads_;
  a.scale = scale_;
  a.q = qkv.columns(0, H);
  a.k = qkv.columns(H, H);
  a.v = qkv.columns(2 * H, H);
  a.q_rel = zero_rel_.ref();
  a.k_rel = zero_rel_.ref();
  a.position_ids = positions;
  a.out = ctx;
  ops::disentangled_attention(be, a, seqs);
  attention_output_and_ffn(be, L, ctx, h);
}

}  // namespace rexnlu::models::siamese
