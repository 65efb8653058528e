#include "models/rex/rex_uninlu_model.h"

#include <cerrno>
#include <cstdlib>
#include <string>

#include "io/checkpoint.h"
#include "models/rex/rex_config.h"
#include "ops/tensor_ops.h"
#include "rexnlu/error.h"

namespace rexnlu::models {

int pad_single_sequences_to(const backends::Backend& be) {
  const char* v = std::getenv("REXNLU_PAD_TO");
  if (v == nullptr || *v == 0) return be.replays_recordings() ? kReplayPadding : 0;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v, &end, 10);
  if (errno != 0 || *end != 0 || n < 0 || n > kMaxPadding)
    throw InputError(std::string("REXNLU_PAD_TO=") + v + ": expected a whole number of tokens from 0 (no padding) to " +
                     std::to_string(kMaxPadding) + "; unset: " + std::to_string(kReplayPadding) +
                     " on a backend that replays recorded passes (CUDA with graphs), else 0");
  return static_cast<int>(n);
}

RexUniNluModel::RexUniNluModel(const rex::ModelConfig& config, const io::TensorStore& weights, int64_t embedding_rows,
                               const LoadOptions& options)
    : config_(config), backend_(backends::make_backend(options)) {
  WeightLoader loader(weights, *backend_);
  encoder_ = std::make_unique<DebertaV2RexEncoder>(config, loader, embedding_rows);
  head_ = std::make_unique<RexLinkHead>(config, loader);
  unused_tensors_ = loader.finish();
  weight_warnings_ = io::check_tensor_values(weights, loader.declared());
  summary_ = loader.summary();
  pad_to_ = pad_single_sequences_to(*backend_);
  if (backend_->device() != Device::kCpu) {
    // One pass of a one-token sequence at load, links asked as extraction asks them: the device
    // loads the forward's kernels now (CUDA loads each at its first launch: the first request
    // took ~70 ms instead of ~9 on the H200, docs/benchmarks.md session 17), and a device that
    // cannot run them fails the load, not a request. Out of memory here (a workspace limit too
    // small for any pass) is left to the requests to report, as it was.
    SequenceInput one;
    one.ids = {0};
    one.position_ids = {0};
    one.mask = {1};
    one.query = {0.0f, false};
    std::vector<SequenceLinks> links;
    try {
      run({one}, false, links, nullptr);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kOutOfMemory) throw;
    }
    forward_calls_ = 0;
  }
}

std::vector<io::TensorSpec> RexUniNluModel::declared_tensors(const rex::ModelConfig& config, int64_t embedding_rows) {
  // The same declarations against an empty checkpoint: every tensor is recorded as missing and
  // nothing is allocated.
  const io::TensorStore empty;
  const std::unique_ptr<backends::Backend> backend = backends::make_backend({});
  WeightLoader loader(empty, *backend);
  DebertaV2RexEncoder encoder(config, loader, embedding_rows);
  RexLinkHead head(config, loader);
  return loader.declared();
}

namespace {

std::vector<LinkLogits> dense_of(std::vector<SequenceLinks>& links) {
  std::vector<LinkLogits> z(links.size());
  for (size_t b = 0; b < links.size(); ++b) z[b] = std::move(links[b].dense);
  return z;
}

}  // namespace

std::vector<LinkLogits> RexUniNluModel::forward(const std::vector<SequenceInput>& batch) {
  std::lock_guard lock(mutex_);
  std::vector<SequenceLinks> links;
  run(batch, true, links, nullptr);
  return dense_of(links);
}

std::vector<SequenceLinks> RexUniNluModel::forward_links(const std::vector<SequenceInput>& batch) {
  std::lock_guard lock(mutex_);
  std::vector<SequenceLinks> links;
  run(batch, false, links, nullptr);
  return links;
}

RexUniNluModel::Outputs RexUniNluModel::forward_with_hidden(const std::vector<SequenceInput>& batch) {
  std::lock_guard lock(mutex_);
  Outputs o;
  std::vector<SequenceLinks> links;
  run(batch, true, links, &o.hidden);
  o.logits = dense_of(links);
  return o;
}

int64_t RexUniNluModel::forward_calls() const {
  return forward_calls_.load();
}

size_t RexUniNluModel::workspace_bytes() const {
  std::lock_guard lock(mutex_);
  return backend_->workspace().capacity_bytes();
}

std::string RexUniNluModel::backend_description() const { return backend_->describe(); }

void RexUniNluModel::run(const std::vector<SequenceInput>& batch, bool dense, std::vector<SequenceLinks>& links,
                         std::vector<std::vector<float>>* hidden) {
  ++forward_calls_;
  if (batch.empty()) return;
  const PackedBatch packed = PackedBatch::pack(batch, encoder_->vocab_rows());
  // One sequence runs padded to a multiple of pad_to_ tokens (a GPU then replays one recording
  // for every length of that bucket); its tokens are the padded pass's first rows.
  const bool pad = pad_to_ > 0 && packed.num_sequences() == 1 && packed.rows() % pad_to_ != 0;
  const PackedBatch padded = pad ? PackedBatch::padded(packed, pad_to_) : PackedBatch{};
  const PackedBatch& encoded = pad ? padded : packed;
  backends::Backend& be = *backend_;
  be.begin_pass();
  const int64_t H = encoder_->hidden_size();
  const TensorRef h_encoded = be.alloc(be.activation_type(), {encoded.rows(), H});
  const ConstTensorRef positions = encoder_->forward(be, encoded, h_encoded).slice(0, packed.rows());
  const TensorRef h = h_encoded.slice(0, packed.rows());
  std::vector<LinkQuery> queries(batch.size());  // default: the dense Z alone
  if (!dense)
    for (size_t b = 0; b < batch.size(); ++b) queries[b] = batch[b].query;
  head_->forward(be, packed, h, positions, queries, links);
  if (hidden) {
    TensorRef h32 = h;  // the hidden states as F32 (widened on the device when they are 16-bit)
    if (h.dtype != DType::kF32) {
      h32 = be.alloc(DType::kF32, {packed.rows(), H});
      ops::copy(be, h, h32);
    }
    hidden->resize(batch.size());
    for (int b = 0; b < packed.num_sequences(); ++b) {
      (*hidden)[b].resize(static_cast<size_t>(packed.length(b) * H));
      be.download(h32.slice(packed.offset(b), packed.length(b)), host_ref((*hidden)[b].data(), {packed.length(b), H}));
    }
  }
}

}  // namespace rexnlu::models
