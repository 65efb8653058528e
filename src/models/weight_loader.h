// The one place a network declares the checkpoint tensors it needs: each call names a tensor
// (or the tensors of a layer) with the shape the config implies, checks it and hands it back in
// backend memory, in the layout the backend chose. The declarations are also the model's tensor
// table: finish() reports every missing or misshapen tensor in ONE error and returns the
// checkpoint's unused tensors; summary() counts the parameters for `rexnlu info`.
//
// A tensor that is missing or has the wrong shape or dtype is recorded, not thrown, and comes back
// empty, so that loading goes on and the error lists all of them. A network that computes
// constants from its weights at load does so only when complete().
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "io/checkpoint.h"
#include "io/tensor_store.h"
#include "ops/conv1d.h"
#include "tensor/tensor.h"

namespace rexnlu::models {

using backends::LinearRole;

class WeightLoader {
 public:
  WeightLoader(const io::TensorStore& store, backends::Backend& backend) : store_(store), backend_(backend) {}

  // F32 tensor `name` of `shape`. `rows_meaning` explains dim 0 in the error when it differs
  // (e.g. "vocab.txt + 4 added tokens = 12804 tokens").
  Tensor tensor(const std::string& name, const std::vector<int64_t>& shape, const std::string& rows_meaning = {});
  // The checked host values of F32 tensor `name` (valid as long as the checkpoint), for constants
  // a network computes at load from several tensors; nullptr when missing or misshapen (recorded).
  const float* host_f32(const std::string& name, const std::vector<int64_t>& shape, const std::string& rows_meaning = {});
  // A tensor checkpoints carry but the network never uses (e.g. BERT's pooler): no error when it is
  // absent, no "unused" warning when it is there.
  void known_unused(const std::string& name) { known_unused_.insert(name); }
  // nn.Linear(in -> out) at `prefix` (prefix.weight [out, in], prefix.bias [out]). Several prefixes
  // with the same input are fused along the outputs (q|k|v: one product instead of three).
  // role: Backend::make_linear_as (a backend may keep some roles above its precision).
  Linear linear(const std::vector<std::string>& prefixes, int64_t out_each, int64_t in,
                LinearRole role = LinearRole::kOther);
  // nn.LayerNorm(width) at `prefix` (prefix.weight, prefix.bias).
  LayerNormWeights layer_norm(const std::string& prefix, int64_t width, float eps);
  // nn.Conv1d(in -> out, kernel 3) at `prefix` (prefix.weight [out, in, 3], prefix.bias [out]); the
  // taps in the backend's activation type (ops::conv1d_k3).
  ops::Conv1dK3Weights conv1d_k3(const std::string& prefix, int64_t out, int64_t in);

  bool complete() const { return missing_.empty() && wrong_.empty(); }
  // Throws rexnlu::Error (kInvalidModel) naming the checkpoint and listing every missing tensor
  // and every wrong shape or dtype; else returns the names of the checkpoint's tensors that were
  // not declared (the caller may warn).
  std::vector<std::string> finish() const;

  struct Summary {
    int64_t tensors = 0, parameters = 0, bytes = 0;  // of the declared tensors, as stored in the checkpoint
    std::set<std::string> dtypes;
  };
  Summary summary() const { return summary_; }
  const std::vector<io::TensorSpec>& declared() const { return declared_; }
  backends::Backend& backend() { return backend_; }

 private:
  // The checked host view of `name`, or nullptr after recording the problem.
  const TensorView* checked(const std::string& name, const std::vector<int64_t>& shape, const std::string& rows_meaning);

  const io::TensorStore& store_;
  backends::Backend& backend_;
  std::vector<io::TensorSpec> declared_;
  std::vector<std::string> missing_, wrong_;
  std::set<std::string> known_unused_;
  Summary summary_;
};

}  // namespace rexnlu::models
