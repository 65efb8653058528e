#include "models/siamese_uie/siamese_uie_model.h"

#include <map>

#include "io/checkpoint.h"
#include "ops/linear.h"
#include "ops/tensor_ops.h"
#include "rexnlu/error.h"

namespace rexnlu::models {

using siamese::kJointLayers;

SiameseUieModel::SiameseUieModel(const siamese::SiameseConfig& config, const io::TensorStore& weights,
                                 const LoadOptions& options)
    : config_(config), backend_(backends::make_backend(options)) {
  WeightLoader loader(weights, *backend_);
  embeddings_ = std::make_unique<siamese::BertEmbeddings>(config, loader);
  lower_ = std::make_unique<siamese::BertLayerStack>(config, loader, "plm.encoder.layer.", config.lower_layers());
  joint_ = std::make_unique<siamese::BertLayerStack>(config, loader, "crossattention.layer.", kJointLayers);
  head_ = loader.linear({"head_clsf", "tail_clsf"}, 1, config.hidden_size);
  loader.known_unused("plm.pooler.dense.weight");  // BertModel(add_pooling_layer=True): never used
  loader.known_unused("plm.pooler.dense.bias");
  unused_tensors_ = loader.finish();
  weight_warnings_ = io::check_tensor_values(weights, loader.declared());
  summary_ = loader.summary();
}

int64_t SiameseUieModel::forward_calls() const {
  return forward_calls_.load();
}

void SiameseUieModel::check_tokens(const std::vector<int32_t>& ids, int32_t first_position,
                                   const std::string& what) const {
  if (ids.empty()) throw InputError(what + ": no tokens");
  for (size_t t = 0; t < ids.size(); ++t) {
    if (ids[t] < 0 || ids[t] >= embeddings_->vocab_rows())
      throw InputError(what + ": token " + std::to_string(t) + " has id " + std::to_string(ids[t]) +
                       ", outside the embedding table [0, " + std::to_string(embeddings_->vocab_rows()) + ")");
  }
  const int64_t last = int64_t{first_position} + static_cast<int64_t>(ids.size()) - 1;
  if (first_position < 0 || last >= embeddings_->max_positions())
    throw InputError(what + ": positions " + std::to_string(first_position) + ".." + std::to_string(last) +
                     " exceed max_position_embeddings " + std::to_string(embeddings_->max_positions()));
}

std::vector<TextStates> SiameseUieModel::encode_texts(const std::vector<std::vector<int32_t>>& windows) {
  std::lock_guard lock(mutex_);
  std::vector<TextStates> out(windows.size());
  if (windows.empty()) return out;
  std::vector<int64_t> offsets = {0};
  std::vector<int32_t> ids, positions;
  for (size_t w = 0; w < windows.size(); ++w) {
    check_tokens(windows[w], 0, "text window " + std::to_string(w));
    ids.insert(ids.end(), windows[w].begin(), windows[w].end());
    for (size_t t = 0; t < windows[w].size(); ++t) positions.push_back(static_cast<int32_t>(t));
    offsets.push_back(offsets.back() + static_cast<int64_t>(windows[w].size()));
  }
  backends::Backend& be = *backend_;
  be.begin_pass();
  const int64_t T = offsets.back(), H = config_.hidden_size;
  const TensorRef h = be.alloc(DType::kF32, {T, H});
  embeddings_->forward(be, ids, positions, 0, h);
  lower_->forward(be, offsets, h);
  for (size_t w = 0; w < windows.size(); ++w) {
    const int64_t L = offsets[w + 1] - offsets[w];
    out[w].resize(static_cast<size_t>(L * H));
    be.download(h.slice(offsets[w], L), host_ref(out[w].data(), {L, H}));
  }
  return out;
}

std::vector<PointerLogits> SiameseUieModel::forward(const std::vector<PointerInput>& batch) {
  std::lock_guard lock(mutex_);
  ++forward_calls_;
  std::vector<PointerLogits> out(batch.size());
  if (batch.empty()) return out;
  const int64_t H = config_.hidden_size;

  // Each distinct (hint, first position) goes through the lower layers once.
  std::map<std::pair<std::vector<int32_t>, int32_t>, size_t> hint_index;
  std::vector<size_t> hint_of(batch.size());
  std::vector<int64_t> hint_offsets = {0};
  std::vector<int32_t> hint_ids, hint_positions;
  for (size_t b = 0; b < batch.size(); ++b) {
    const PointerInput& in = batch[b];
    const std::string where = "sequence " + std::to_string(b) + " of the batch";
    if (!in.text || in.text_length <= 0 || in.text->size() != static_cast<size_t>(in.text_length * H))
      throw InputError(where + ": text states do not hold " + std::to_string(in.text_length) + " x " +
                       std::to_string(H) + " values");
    check_tokens(in.hint_ids, in.hint_first_position, where + " (hint)");
    const auto [it, added] = hint_index.try_emplace({in.hint_ids, in.hint_first_position}, hint_index.size());
    hint_of[b] = it->second;
    if (!added) continue;
    hint_ids.insert(hint_ids.end(), in.hint_ids.begin(), in.hint_ids.end());
    for (size_t t = 0; t < in.hint_ids.size(); ++t)
      hint_positions.push_back(in.hint_first_position + static_cast<int32_t>(t));
    hint_offsets.push_back(hint_offsets.back() + static_cast<int64_t>(in.hint_ids.size()));
  }

  backends::Backend& be = *backend_;
  be.begin_pass();
  const TensorRef hints = be.alloc(DType::kF32, {hint_offsets.back(), H});
  embeddings_->forward(be, hint_ids, hint_positions, 1, hints);
  lower_->forward(be, hint_offsets, hints);

  // [window ; hint] rows of every pair, back to back.
  std::vector<int64_t> offsets = {0};
  for (const PointerInput& in : batch) offsets.push_back(offsets.back() + in.length());
  const int64_t T = offsets.back();
  const TensorRef h = be.alloc(DType::kF32, {T, H});
  for (size_t b = 0; b < batch.size(); ++b) {
    const int64_t Lt = batch[b].text_length, row0 = offsets[b];
    const size_t k = hint_of[b];
    const int64_t Lh = hint_offsets[k + 1] - hint_offsets[k];
    ops::copy(be, be.upload(host_ref(batch[b].text->data(), {Lt, H})), h.slice(row0, Lt));
    ops::copy(be, hints.slice(hint_offsets[k], Lh), h.slice(row0 + Lt, Lh));
  }
  joint_->forward(be, offsets, h);

  std::vector<float> logits(static_cast<size_t>(T * 2));
  const TensorRef host = host_ref(logits.data(), {T, 2});
  const TensorRef z = be.output_for(host);
  ops::linear(be, h, head_, z);
  be.download(z, host);
  for (size_t b = 0; b < batch.size(); ++b) {
    const auto Lt = static_cast<size_t>(batch[b].text_length);
    const auto row0 = static_cast<size_t>(offsets[b]);
    out[b].head.resize(Lt);
    out[b].tail.resize(Lt);
    for (size_t t = 0; t < Lt; ++t) {
      out[b].head[t] = logits[(row0 + t) * 2];
      out[b].tail[t] = logits[(row0 + t) * 2 + 1];
    }
  }
  return out;
}

}  // namespace rexnlu::models
