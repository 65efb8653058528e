// Tensors that own their memory on a backend's device (weights, constants computed at load),
// and the weight handles the network code holds. A backend allocates them (Backend::alloc_tensor,
// Backend::make_linear), so it decides where they live and how a layer's weights are laid out.
#pragma once

#include <memory>
#include <utility>

#include "tensor/tensor_ref.h"

namespace rexnlu {

class Tensor {
 public:
  Tensor() = default;
  // `storage` keeps the memory `ref` points into alive (shared by slices).
  Tensor(std::shared_ptr<void> storage, TensorRef ref) : storage_(std::move(storage)), ref_(ref) {}

  bool empty() const { return ref_.empty(); }
  ConstTensorRef ref() const { return ref_; }
  operator ConstTensorRef() const { return ref_; }  // NOLINT(google-explicit-constructor)
  TensorRef mutable_ref() { return ref_; }
  // Rows [first, first + count) of dimension 0, sharing the memory.
  Tensor slice(int64_t first, int64_t count) const { return Tensor(storage_, ref_.slice(first, count)); }

 private:
  std::shared_ptr<void> storage_;
  TensorRef ref_;
};

// The weights of y = x W^T + b (nn.Linear, W = [out, in]) in the layout the backend chose at load
// for the requested precision: F32 [out, in]; an I8 W (--precision int8) comes with a
// per-output-channel `scale` [out] and `scaled_sum` [out], BF16 W with neither. ops::linear reads
// whichever layout it finds. `prepared` is the backend's own copy of W made at load for its kernels
// (CPU: oneDNN's packed layout, backends/cpu/dnnl_matmul.h), or null. Where `prepared` is the only
// copy (CPU fp32 with packed weights), `weight` carries W's dtype and shape but no data
// (has_plain_weight() false) and an out_slice keeps `prepared` with the offset of its channels
// (the kernel unpacks W when it needs the plain layout); otherwise an out_slice drops `prepared`
// (the kernels then read its rows of W itself).
struct Linear {
  Tensor weight;
  Tensor bias;        // [out], F32; may be empty
  // [out] in W's 16-bit type, for outputs of that type (a 16-bit W on the GPU: cuBLASLt's bias
  // epilogue reads the output's type); empty otherwise.
  Tensor bias_16;
  Tensor scale;       // [out], F32; only for integer weights: W[n,:] ~ scale[n] * weight[n,:]
  Tensor scaled_sum;  // [out], F32; only for integer weights: scale[n] * sum_k weight[n,k]
  std::shared_ptr<const void> prepared = nullptr;  // W in the backend's own layout, or null
  int64_t prepared_first = 0;  // where weight has no data: this layer's outputs are rows [prepared_first, +out) of it

  int64_t out_features() const { return weight.ref().shape[0]; }
  int64_t in_features() const { return weight.ref().cols(); }
  bool has_plain_weight() const { return !weight.empty(); }
  // Output channels [first, first + count) (e.g. q|k of a fused q|k|v layer).
  Linear out_slice(int64_t first, int64_t count) const {
    Linear s{has_plain_weight() ? weight.slice(first, count) : shape_only(weight.ref(), count),
             bias.empty() ? Tensor() : bias.slice(first, count),
             bias_16.empty() ? Tensor() : bias_16.slice(first, count), scale.empty() ? Tensor() : scale.slice(first, count),
             scaled_sum.empty() ? Tensor() : scaled_sum.slice(first, count), nullptr, 0};
    if (!has_plain_weight()) {
      s.prepared = prepared;
      s.prepared_first = prepared_first + first;
    } else if (first == 0 && count == out_features()) {
      s.prepared = prepared;
    }
    return s;
  }
  // A weight of W's dtype and shape [rows, W's columns] without data (for a Linear whose only copy is `prepared`).
  static Tensor shape_only(ConstTensorRef w, int64_t rows) {
    TensorRef r(nullptr, w.dtype, {rows, w.cols()}, w.device);
    return Tensor(nullptr, r);
  }
};

// LayerNorm(x) * gamma + beta over the last dimension.
struct LayerNormWeights {
  Tensor gamma, beta;  // [width], F32
  float eps = 1e-7f;
};

}  // namespace rexnlu
