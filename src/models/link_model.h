// The interface between the UIE pipeline (src/uie) and a model (src/models): a batch of
// prompt sequences in, one token-pair link-logit matrix Z per sequence out.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <vector>

namespace rexnlu::models {

// One prompt sequence as spec sections 5.3 and 5.4 build it.
struct SequenceInput {
  std::vector<int32_t> ids;           // [L]
  std::vector<int32_t> position_ids;  // [L], reset per prompt segment
  std::vector<uint8_t> mask;          // [L*L] row-major, 1 = row token may attend to column token
  int32_t length() const { return static_cast<int32_t>(ids.size()); }
};

// Z for one sequence: [L*L] row-major, Z[i*L+j] is the logit of the link i -> j.
using LinkLogits = std::vector<float>;

class LinkModel {
 public:
  virtual ~LinkModel() = default;
  // Runs all sequences (of different lengths) through the encoder and head together.
  // Padding or packing is internal: a sequence's result never depends on the others.
  virtual std::vector<LinkLogits> forward(const std::vector<SequenceInput>& batch) = 0;
  // Number of forward() calls so far (tests check one batched call per recursion level).
  virtual int64_t forward_calls() const = 0;
};

// Cancelling a forward call between encoder layers: the caller installs a check for the forward
// calls it makes on this thread (CancelScope); a model asks forward_cancelled() between layers and
// throws ForwardCancelled when it says so. A model that never asks just finishes the call.
struct ForwardCancelled : std::exception {
  const char* what() const noexcept override { return "forward call cancelled"; }
};

inline thread_local const std::function<bool()>* t_forward_cancel_check = nullptr;

inline bool forward_cancelled() { return t_forward_cancel_check && (*t_forward_cancel_check)(); }

class CancelScope {
 public:
  explicit CancelScope(const std::function<bool()>& check) : previous_(t_forward_cancel_check) {
    t_forward_cancel_check = &check;
  }
  ~CancelScope() { t_forward_cancel_check = previous_; }
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

 private:
  const std::function<bool()>* previous_;
};

}  // namespace rexnlu::models
