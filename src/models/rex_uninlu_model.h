// The RexUniNLU network behind the LinkModel interface: encoder + link head over a packed
// batch, CPU, float32.
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <vector>

#include "io/model_config.h"
#include "io/tensor_store.h"
#include "models/deberta_v2_rex.h"
#include "models/link_model.h"
#include "models/rex_link_head.h"
#include "tensor/workspace.h"

namespace rexnlu::models {

class RexUniNluModel final : public LinkModel {
 public:
  // config.json + the checkpoint (model.safetensors or pytorch_model.bin) of `model_dir`.
  static std::unique_ptr<RexUniNluModel> load(const std::filesystem::path& model_dir);
  // Copies what it needs: `weights` may be dropped afterwards.
  RexUniNluModel(const io::ModelConfig& config, const io::TensorStore& weights);

  std::vector<LinkLogits> forward(const std::vector<SequenceInput>& batch) override;
  int64_t forward_calls() const override;

  struct Outputs {
    std::vector<LinkLogits> logits;             // [L*L] per sequence
    std::vector<std::vector<float>> hidden;     // [L*H] per sequence: the encoder's last layer
  };
  // forward() that also returns the encoder output (for parity tests and debugging).
  Outputs forward_with_hidden(const std::vector<SequenceInput>& batch);

  const io::ModelConfig& config() const { return config_; }
  // Scratch memory reserved for activations: the peak of the largest batch so far (one layer's
  // buffers at a time, not the sum over layers).
  size_t workspace_bytes() const;

 private:
  // Runs the batch; fills hidden only when asked. Callers hold mutex_ (the workspace is shared).
  void run(const std::vector<SequenceInput>& batch, std::vector<LinkLogits>& logits,
           std::vector<std::vector<float>>* hidden);

  io::ModelConfig config_;
  DebertaV2RexEncoder encoder_;
  RexLinkHead head_;
  mutable std::mutex mutex_;
  Workspace workspace_;
  int64_t forward_calls_ = 0;
};

}  // namespace rexnlu::models
