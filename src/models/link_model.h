// The interface between the UIE pipeline (src/uie) and a model (src/models): a batch of
// prompt sequences in, per sequence the token-pair link logits Z that decoding reads out: the
// links above the request's threshold and, where the decode reads more (the classification
// modes), the whole matrix.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <vector>

namespace rexnlu::models {

// What decoding reads of one sequence's Z (src/uie/decode.cpp): extraction only the cells above
// the threshold; the classification modes also transposed cells and cells below it.
struct LinkQuery {
  float threshold = std::numeric_limits<float>::infinity();  // links: every cell with Z > threshold
  bool dense = true;                                          // and the whole Z
};

// One prompt sequence as spec sections 5.3 and 5.4 build it.
struct SequenceInput {
  std::vector<int32_t> ids;           // [L]
  std::vector<int32_t> position_ids;  // [L], reset per prompt segment
  std::vector<uint8_t> mask;          // [L*L] row-major, 1 = row token may attend to column token
  LinkQuery query;                    // what LinkModel::forward_links returns for it
  int32_t length() const { return static_cast<int32_t>(ids.size()); }
};

// Z for one sequence: [L*L] row-major, Z[i*L+j] is the logit of the link i -> j.
using LinkLogits = std::vector<float>;

// One cell of Z: the link row -> col and its logit.
struct Link {
  int32_t row = 0, col = 0;
  float logit = 0.0f;
  bool operator==(const Link&) const = default;
};

// What forward_links returns for one sequence (of length L) and its query q.
struct SequenceLinks {
  int32_t length = 0;
  float threshold = std::numeric_limits<float>::infinity();  // q.threshold
  std::vector<Link> links;  // every cell with Z > threshold (NaN never is), by row, then column
  LinkLogits dense;         // [L*L] when q.dense, else empty

  // The same from the dense Z (L*L values; moved into `dense` when q.dense; a z of another size
  // is kept in `dense` as it is, for check() to report).
  static SequenceLinks from_dense(LinkLogits z, int32_t length, const LinkQuery& q);
  // Throws rexnlu::Error (kInternal) naming `who` unless the links are in range and strictly
  // ordered and dense is empty or L*L (a model's answer before decoding trusts it).
  void check(const char* who) const;
};

class LinkModel {
 public:
  virtual ~LinkModel() = default;
  // Runs all sequences (of different lengths) through the encoder and head together.
  // Padding or packing is internal: a sequence's result never depends on the others.
  // The dense Z of every sequence (the queries are not read).
  virtual std::vector<LinkLogits> forward(const std::vector<SequenceInput>& batch) = 0;
  // What each sequence's query asks for (the pipeline's call): a device model copies back only
  // that. Default: forward() and SequenceLinks::from_dense, one forward call.
  virtual std::vector<SequenceLinks> forward_links(const std::vector<SequenceInput>& batch);
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
