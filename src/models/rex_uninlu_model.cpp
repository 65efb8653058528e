#include "models/rex_uninlu_model.h"

#include "io/checkpoint.h"
#include "io/model_config.h"

namespace rexnlu::models {

std::unique_ptr<RexUniNluModel> RexUniNluModel::load(const std::filesystem::path& model_dir) {
  const io::ModelConfig config = io::load_model_config(model_dir / "config.json");
  const io::TensorStore weights = io::load_checkpoint(model_dir);
  return std::make_unique<RexUniNluModel>(config, weights);
}

RexUniNluModel::RexUniNluModel(const io::ModelConfig& config, const io::TensorStore& weights)
    : config_(config), encoder_(config, weights), head_(config, weights) {}

std::vector<LinkLogits> RexUniNluModel::forward(const std::vector<SequenceInput>& batch) {
  std::lock_guard lock(mutex_);
  std::vector<LinkLogits> logits;
  run(batch, logits, nullptr);
  return logits;
}

RexUniNluModel::Outputs RexUniNluModel::forward_with_hidden(const std::vector<SequenceInput>& batch) {
  std::lock_guard lock(mutex_);
  Outputs o;
  run(batch, o.logits, &o.hidden);
  return o;
}

int64_t RexUniNluModel::forward_calls() const {
  std::lock_guard lock(mutex_);
  return forward_calls_;
}

size_t RexUniNluModel::workspace_bytes() const {
  std::lock_guard lock(mutex_);
  return workspace_.capacity_bytes();
}

void RexUniNluModel::run(const std::vector<SequenceInput>& batch, std::vector<LinkLogits>& logits,
                         std::vector<std::vector<float>>* hidden) {
  ++forward_calls_;
  if (batch.empty()) return;
  const PackedBatch packed = PackedBatch::pack(batch, encoder_.vocab_rows());
  workspace_.reset();
  const size_t H = static_cast<size_t>(encoder_.hidden_size());
  float* h = workspace_.alloc<float>(packed.rows() * H);
  encoder_.forward(packed, h, workspace_);
  head_.forward(packed, h, logits, workspace_);
  if (hidden) {
    hidden->resize(batch.size());
    for (int b = 0; b < packed.num_sequences(); ++b) {
      const float* src = h + static_cast<size_t>(packed.offset(b)) * H;
      (*hidden)[b].assign(src, src + packed.length(b) * H);
    }
  }
}

}  // namespace rexnlu::models
