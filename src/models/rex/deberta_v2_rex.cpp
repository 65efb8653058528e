#include "models/rex/deberta_v2_rex.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "ops/attention.h"
#include "ops/conv1d.h"
#include "ops/layer_norm.h"
#include "ops/linear.h"
#include "ops/tensor_ops.h"
#include "models/link_model.h"

namespace rexnlu::models {

DebertaV2RexEncoder::DebertaV2RexEncoder(const rex::ModelConfig& c, WeightLoader& w, int64_t embedding_rows) {
  // config.json was checked for the Rex variant of DeBERTa-v2 when it was parsed (model_config.cpp).
  hidden_ = c.hidden_size;
  heads_ = c.num_attention_heads;
  intermediate_ = c.intermediate_size;
  rel_rows_ = 2 * c.position_buckets;
  vocab_rows_ = static_cast<int>(embedding_rows);
  // scale_factor = 1 + |{c2p, p2c}| = 3, computed in float32 as torch does.
  scale_ = std::sqrt(static_cast<float>(c.head_dim()) * 3.0f);
  const float eps = c.layer_norm_eps;

  const int64_t H = hidden_, I = intermediate_;
  const std::string emb = "plm.embeddings.";
  word_embeddings_ = w.tensor(emb + "word_embeddings.weight", {embedding_rows, H},
                              "vocab.txt + 4 added tokens = " + std::to_string(embedding_rows) + " tokens");
  emb_ln_ = w.layer_norm(emb + "LayerNorm", H, eps);

  const std::string enc = "plm.encoder.";
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = enc + "layer." + std::to_string(l) + ".";
    layers_.push_back(Layer{declare_encoder_layer(w, p, "query_proj", "key_proj", "value_proj", H, I, eps), {}});
  }
  Tensor rel = w.tensor(enc + "rel_embeddings.weight", {rel_rows_, H});
  const LayerNormWeights rel_ln = w.layer_norm(enc + "LayerNorm", H, eps);
  conv_ = w.conv1d_k3(enc + "conv.conv", H, H);
  conv_ln_ = w.layer_norm(enc + "conv.LayerNorm", H, eps);
  if (!w.complete()) return;  // the loader reports what is missing; nothing to compute with

  // R = LayerNorm(rel_embeddings) is the same for every layer and every input, so Qr and Kr
  // (query/key projections of R, bias included) are computed once here, not per forward.
  backends::Backend& be = w.backend();
  ops::layer_norm(be, rel, {}, rel_ln, rel.mutable_ref());
  for (Layer& L : layers_) {  // in the activations' type: the attention reads them with q, k, v
    L.rel_qk = be.alloc_tensor(be.activation_type(), {rel_rows_, 2 * H});
    ops::linear(be, rel, L.w.qkv.out_slice(0, 2 * H), L.rel_qk.mutable_ref());
  }
}

ConstTensorRef DebertaV2RexEncoder::forward(backends::Backend& be, const PackedBatch& batch, TensorRef h) const {
  const int64_t T = batch.rows(), H = hidden_;
  // Everything the layers read from the host goes to the device first, so that the layers
  // themselves are device work only (a GPU records them once per shape and replays them).
  // In one transfer: ids, positions, the rows any token attends to, then every sequence's mask.
  const std::vector<uint8_t> keep_host = input_mask(batch);  // upload_all() may refer to it (CPU)
  std::vector<ConstTensorRef> inputs = {host_ref(batch.ids.data(), {T}), host_ref(batch.position_ids.data(), {T}),
                                        host_ref(keep_host.data(), {T})};
  // Padding tokens (PackedBatch::padded) get zero embeddings: `real` goes up last, and names
  // another recording than an unpadded batch of the same lengths.
  const bool padded = !batch.real.empty();
  std::string key = padded ? "rex padded" : "rex";
  for (int b = 0; b < batch.num_sequences(); ++b) {
    key += ' ';
    key += std::to_string(batch.length(b));
  }
  // A device gets the masks as bits (ops::pack_bits: 1/8 of the bytes to stage and copy, 2 MB -> 256 KB
  // at L512 b8), each sequence's from a 64-byte boundary of one buffer, made bytes again on the device
  // as the recording's first step; the CPU reads the host masks as they are.
  const MaskBits bits = mask_bits(be, batch);
  if (bits.words.empty()) {
    for (int b = 0; b < batch.num_sequences(); ++b)
      inputs.push_back(host_ref(batch.masks[b], {batch.length(b), batch.length(b)}));
  } else {
    inputs.push_back(host_ref(reinterpret_cast<const int32_t*>(bits.words.data()), {static_cast<int64_t>(bits.words.size())}));
  }
  if (padded) inputs.push_back(host_ref(batch.real.data(), {T}));
  const std::vector<ConstTensorRef> uploaded = be.upload_all(inputs);
  const ConstTensorRef &ids = uploaded[0], &positions = uploaded[1], &keep = uploaded[2];
  const ConstTensorRef real = padded ? uploaded.back() : ConstTensorRef{};
  std::vector<ConstTensorRef> masks(uploaded.begin() + 3, uploaded.end() - (padded ? 1 : 0));
  TensorRef mask_bytes;
  if (!bits.words.empty()) {
    mask_bytes = be.alloc(DType::kU8, {bits.bytes});
    masks.clear();
    for (int b = 0; b < batch.num_sequences(); ++b) {
      const int64_t L = batch.length(b);
      masks.push_back(ConstTensorRef(mask_bytes.data + bits.at[static_cast<size_t>(b)], DType::kU8, {L, L}, be.device()));
    }
  }
  // The flash attention reads the uploaded bits themselves (bit k = mask_bytes' byte k).
  const ops::PackedSequences seqs =
      ops::pack_sequences(be, batch.offsets, masks, bits.words.empty() ? ConstTensorRef{} : uploaded[3]);
  // The activations from the embeddings' layer norm on are of the backend's activation type (h's).
  // emb is layer 0's input and the conv's: layer 0 writes h (there are layers: config_reader.h).
  const TensorRef emb = be.alloc(h.dtype, {T, H});
  if (forward_cancelled()) throw ForwardCancelled();
  be.run_recorded(key, [&] {
    if (!mask_bytes.empty()) ops::unpack_bits(be, uploaded[3], mask_bytes);
    // Embeddings: LayerNorm of the word embeddings' rows of the ids (F32, gathered by the layer
    // norm itself). No position or token-type embeddings, and the Rex variant multiplies by a mask
    // of ones (a no-op); padding's rows are zeros.
    ops::layer_norm(be, word_embeddings_, {}, emb_ln_, emb, {.x_rows = ids, .keep = real});
    for (size_t l = 0; l < layers_.size(); ++l) {
      // The caller gave up (deadline, drain): checked between layers when the pass runs here
      // (not inside a replayed recording, which runs all layers at once).
      if (forward_cancelled()) throw ForwardCancelled();
      run_layer(be, layers_[l], seqs, positions, l == 0 ? ConstTensorRef(emb) : ConstTensorRef(h), h);
      if (l == 0) run_conv(be, seqs, keep, emb, h);
    }
  });
  return positions;
}

DebertaV2RexEncoder::MaskBits DebertaV2RexEncoder::mask_bits(const backends::Backend& be, const PackedBatch& batch) {
  MaskBits bits;
  if (be.device() == Device::kCpu) return bits;
  constexpr int64_t kAlign = 64;  // bytes (= bits): each mask starts a whole word, and 16-byte stores
  for (int b = 0; b < batch.num_sequences(); ++b) {
    bits.at.push_back(bits.bytes);
    const int64_t L = batch.length(b);
    bits.bytes += (L * L + kAlign - 1) / kAlign * kAlign;
  }
  bits.words.assign(static_cast<size_t>(bits.bytes / 32), 0u);
  for (int b = 0; b < batch.num_sequences(); ++b) {
    const int64_t L = batch.length(b);
    ops::pack_bits(batch.masks[b], L * L, bits.words.data() + bits.at[static_cast<size_t>(b)] / 32);
  }
  return bits;
}

std::vector<uint8_t> DebertaV2RexEncoder::input_mask(const PackedBatch& batch) {
  const int64_t T = batch.rows();
  std::vector<uint8_t> keep_host(static_cast<size_t>(T));
  for (int b = 0; b < batch.num_sequences(); ++b) {
    const int64_t row0 = batch.offset(b);
    const int len = batch.length(b);
    const uint8_t* m = batch.masks[b];
    for (int j = 0; j < len; ++j) {
      bool any = false;
      for (int i = 0; i < len && !any; ++i) any = m[static_cast<size_t>(i) * len + j] != 0;
      keep_host[static_cast<size_t>(row0 + j)] = any ? 1 : 0;
    }
  }
  return keep_host;
}

void DebertaV2RexEncoder::run_layer(backends::Backend& be, const Layer& L, const ops::PackedSequences& seqs,
                                    ConstTensorRef positions, ConstTensorRef x, TensorRef h) const {
  const int64_t T = seqs.rows(), H = hidden_;
  const Workspace::Frame frame(be.workspace());  // this layer's buffers are free again for the next layer
  const TensorRef qkv = project_qkv(be, L.w, x);

  const TensorRef ctx = be.alloc(h.dtype, {T, H});
  ops::DisentangledAttention a;  // every sequence of the batch, each under its own mask
  a.num_heads = heads_;
  a.scale = scale_;
  a.q = qkv.columns(0, H);
  a.k = qkv.columns(H, H);
  a.v = qkv.columns(2 * H, H);
  a.q_rel = L.rel_qk.ref().columns(0, H);
  a.k_rel = L.rel_qk.ref().columns(H, H);
  a.position_ids = positions;
  a.out = ctx;
  ops::disentangled_attention(be, a, seqs);

  attention_output_and_ffn(be, L.w, ctx, x, h);
}

void DebertaV2RexEncoder::run_conv(backends::Backend& be, const ops::PackedSequences& seqs, ConstTensorRef keep,
                                   ConstTensorRef emb, TensorRef h) const {
  const int64_t T = seqs.rows(), H = hidden_;
  const Workspace::Frame frame(be.workspace());
  const TensorRef conv = be.alloc(h.dtype, {T, H});
  // conv = gelu(conv1d(emb)) * input_mask, zero padding at each sequence's own ends
  ops::conv1d_k3(be, emb, conv_, conv, seqs, {.keep = keep, .gelu_erf = true});
  // h = LayerNorm(h + conv) * input_mask
  ops::layer_norm(be, h, conv, conv_ln_, h, {.keep = keep});
}

}  // namespace rexnlu::models
