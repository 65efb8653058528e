// The RexUniNLU network behind the LinkModel interface: encoder + link head over a packed
// batch, on the backend LoadOptions picks (CPU, float32 today).
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "models/rex/rex_config.h"
#include "io/checkpoint.h"
#include "io/tensor_store.h"
#include "models/rex/deberta_v2_rex.h"
#include "models/link_model.h"
#include "models/rex/rex_link_head.h"
#include "models/weight_loader.h"
#include "rexnlu/load_options.h"

namespace rexnlu::models {

// Tokens a pass of ONE sequence is padded to a multiple of (PackedBatch::padded; the results are
// those of the unpadded pass): REXNLU_PAD_TO (0 = never, up to kMaxPadding), unset: kReplayPadding
// where the backend replays recorded passes (a GPU with CUDA graphs: a recording then serves every
// length of a bucket, where each length would otherwise run its first two passes unrecorded), 0
// elsewhere. Throws InputError naming the variable on any other value.
inline constexpr int kReplayPadding = 32;
inline constexpr int kMaxPadding = 512;
int pad_single_sequences_to(const backends::Backend& be);

class RexUniNluModel final : public LinkModel {
 public:
  // Directories load through the registry (models/registry.h -> rex_family.cpp).
  // Checks every tensor the network declares (one error listing all problems) and copies them
  // to the backend: `weights` may be dropped afterwards.
  RexUniNluModel(const rex::ModelConfig& config, const io::TensorStore& weights, int64_t embedding_rows,
                 const LoadOptions& options = {});

  // The checkpoint tensors the network declares for `config` (names, shapes), without loading any.
  static std::vector<io::TensorSpec> declared_tensors(const rex::ModelConfig& config, int64_t embedding_rows);

  std::vector<LinkLogits> forward(const std::vector<SequenceInput>& batch) override;
  std::vector<SequenceLinks> forward_links(const std::vector<SequenceInput>& batch) override;
  int64_t forward_calls() const override;

  struct Outputs {
    std::vector<LinkLogits> logits;             // [L*L] per sequence
    std::vector<std::vector<float>> hidden;     // [L*H] per sequence: the encoder's last layer
  };
  // forward() that also returns the encoder output (for parity tests and debugging).
  Outputs forward_with_hidden(const std::vector<SequenceInput>& batch);

  const rex::ModelConfig& config() const { return config_; }
  const std::vector<std::string>& unused_tensors() const { return unused_tensors_; }  // in the checkpoint
  // Warnings about the declared tensors' values (weights that hold only zeros); a NaN or infinity
  // was already refused by the constructor (io::check_tensor_values).
  const std::vector<std::string>& weight_warnings() const { return weight_warnings_; }
  const WeightLoader::Summary& weights_summary() const { return summary_; }
  std::string backend_description() const;
  // Scratch memory reserved for activations: the peak of the largest batch so far (one layer's
  // buffers at a time, not the sum over layers).
  size_t workspace_bytes() const;

 private:
  // Runs the batch: the sequences' queries, or every dense Z when `dense`; fills hidden only when
  // asked. Callers hold mutex_ (the backend's workspace is shared).
  void run(const std::vector<SequenceInput>& batch, bool dense, std::vector<SequenceLinks>& links,
           std::vector<std::vector<float>>* hidden);

  rex::ModelConfig config_;
  std::unique_ptr<backends::Backend> backend_;
  std::unique_ptr<DebertaV2RexEncoder> encoder_;
  std::unique_ptr<RexLinkHead> head_;
  std::vector<std::string> unused_tensors_;
  std::vector<std::string> weight_warnings_;
  WeightLoader::Summary summary_;
  mutable std::mutex mutex_;
  // Read without mutex_: a caller may ask while a forward holds it (Python reads it from another
  // thread while the forward waits for the GIL to check for Ctrl-C: that deadlocked).
  std::atomic<int64_t> forward_calls_{0};
  int pad_to_ = 0;  // pad_single_sequences_to()
};

}  // namespace rexnlu::models
