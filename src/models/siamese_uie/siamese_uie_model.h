// The SiameseUIE network behind the PointerModel interface (models/pointer_model.h): BERT
// embeddings, the lower layers run on text windows and hints apart (shared weights), the last 6
// layers on [window ; hint], and the head_clsf / tail_clsf pointer head on the window's tokens.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "io/tensor_store.h"
#include "models/pointer_model.h"
#include "models/siamese_uie/bert_encoder.h"
#include "models/siamese_uie/siamese_config.h"
#include "models/weight_loader.h"
#include "rexnlu/load_options.h"

namespace rexnlu::models {

class SiameseUieModel final : public PointerModel {
 public:
  // Checks every tensor the network declares (one error listing all problems) and copies them
  // to the backend: `weights` may be dropped afterwards.
  SiameseUieModel(const siamese::SiameseConfig& config, const io::TensorStore& weights, const LoadOptions& options = {});

  std::vector<TextStates> encode_texts(const std::vector<std::vector<int32_t>>& windows) override;
  std::vector<PointerLogits> forward(const std::vector<PointerInput>& batch) override;
  int64_t forward_calls() const override;

  const siamese::SiameseConfig& config() const { return config_; }
  const std::vector<std::string>& unused_tensors() const { return unused_tensors_; }
  const std::vector<std::string>& weight_warnings() const { return weight_warnings_; }
  const WeightLoader::Summary& weights_summary() const { return summary_; }
  std::string backend_description() const { return backend_->describe(); }

 private:
  // Throws rexnlu::Error (kInvalidInput) naming the sequence and token of an id outside the
  // embedding table or a position past max_position_embeddings.
  void check_tokens(const std::vector<int32_t>& ids, int32_t first_position, const std::string& what) const;

  siamese::SiameseConfig config_;
  std::unique_ptr<backends::Backend> backend_;
  std::unique_ptr<siamese::BertEmbeddings> embeddings_;
  std::unique_ptr<siamese::BertLayerStack> lower_, joint_;
  Linear head_;  // head_clsf | tail_clsf fused: [2, H]
  std::vector<std::string> unused_tensors_, weight_warnings_;
  WeightLoader::Summary summary_;
  mutable std::mutex mutex_;
  // Read without mutex_: a caller may ask while a forward holds it (Python reads it from another
  // thread while the forward waits for the GIL to check for Ctrl-C: that deadlocked).
  std::atomic<int64_t> forward_calls_{0};
};

}  // namespace rexnlu::models
