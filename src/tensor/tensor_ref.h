// A typed reference to tensor memory owned elsewhere (a workspace, a weight Tensor, the caller):
// data, dtype, device, shape and strides. Ops take these instead of raw pointers, so one op
// declaration serves every backend and can check what it is given.
//   TensorRef       may be written through (outputs, in-place ops)
//   ConstTensorRef  read only (inputs, weights); a TensorRef converts to it
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>

#include "rexnlu/load_options.h"
#include "tensor/dtype.h"

namespace rexnlu {

inline constexpr int kMaxTensorRank = 4;

template <typename Byte>
struct BasicTensorRef {
  Byte* data = nullptr;
  DType dtype = DType::kF32;
  Device device = Device::kCpu;
  int rank = 0;
  std::array<int64_t, kMaxTensorRank> shape{};    // outermost first
  std::array<int64_t, kMaxTensorRank> strides{};  // in elements; row-major contiguous unless sliced

  BasicTensorRef() = default;
  // Contiguous row-major tensor of `shape` at `data`.
  BasicTensorRef(Byte* p, DType t, std::initializer_list<int64_t> dims, Device d = Device::kCpu)
      : data(p), dtype(t), device(d), rank(static_cast<int>(dims.size())) {
    int i = 0;
    for (int64_t n : dims) shape[i++] = n;
    int64_t stride = 1;
    for (int k = rank - 1; k >= 0; --k) {
      strides[k] = stride;
      stride *= shape[k];
    }
  }
  // TensorRef -> ConstTensorRef.
  template <typename Other>
    requires(!std::is_same_v<Other, Byte> && std::is_convertible_v<Other*, Byte*>)
  BasicTensorRef(const BasicTensorRef<Other>& o)  // NOLINT(google-explicit-constructor)
      : data(o.data), dtype(o.dtype), device(o.device), rank(o.rank), shape(o.shape), strides(o.strides) {}

  bool empty() const { return data == nullptr; }
  int64_t numel() const {
    int64_t n = 1;
    for (int k = 0; k < rank; ++k) n *= shape[k];
    return n;
  }
  bool contiguous() const {
    int64_t stride = 1;
    for (int k = rank - 1; k >= 0; --k) {
      if (shape[k] != 1 && strides[k] != stride) return false;
      stride *= shape[k];
    }
    return true;
  }
  // Matrices ([rows, cols] with a row stride; a vector is one row).
  int64_t rows() const { return rank >= 2 ? shape[0] : 1; }
  int64_t cols() const { return rank >= 1 ? shape[rank - 1] : 1; }
  int64_t ld() const { return rank >= 2 ? strides[0] : cols(); }

  // Elements [first, first + count) of dimension 0 (e.g. one sequence's token rows).
  BasicTensorRef slice(int64_t first, int64_t count) const {
    BasicTensorRef r = *this;
    r.data = data + first * strides[0] * static_cast<int64_t>(dtype_size(dtype));
    r.shape[0] = count;
    return r;
  }
  // Columns [first, first + count) of the last dimension (e.g. one head, or q of a q|k|v buffer).
  BasicTensorRef columns(int64_t first, int64_t count) const {
    BasicTensorRef r = *this;
    r.data = data + first * strides[rank - 1] * static_cast<int64_t>(dtype_size(dtype));
    r.shape[rank - 1] = count;
    return r;
  }

  // Typed pointers; the op checked the dtype.
  auto* f32() const { return reinterpret_cast<std::conditional_t<std::is_const_v<Byte>, const float, float>*>(data); }
  auto* i32() const { return reinterpret_cast<std::conditional_t<std::is_const_v<Byte>, const int32_t, int32_t>*>(data); }
  auto* u8() const { return reinterpret_cast<std::conditional_t<std::is_const_v<Byte>, const uint8_t, uint8_t>*>(data); }
};

using TensorRef = BasicTensorRef<std::byte>;
using ConstTensorRef = BasicTensorRef<const std::byte>;

// Host memory wrapped as tensors (the ops' inputs and outputs in tests and on the CPU).
inline TensorRef host_ref(float* p, std::initializer_list<int64_t> shape) {
  return TensorRef(reinterpret_cast<std::byte*>(p), DType::kF32, shape);
}
inline ConstTensorRef host_ref(const float* p, std::initializer_list<int64_t> shape) {
  return ConstTensorRef(reinterpret_cast<const std::byte*>(p), DType::kF32, shape);
}
inline ConstTensorRef host_ref(const int32_t* p, std::initializer_list<int64_t> shape) {
  return ConstTensorRef(reinterpret_cast<const std::byte*>(p), DType::kI32, shape);
}
inline ConstTensorRef host_ref(const uint8_t* p, std::initializer_list<int64_t> shape) {
  return ConstTensorRef(reinterpret_cast<const std::byte*>(p), DType::kU8, shape);
}
// A [rows, cols] matrix with row stride ld.
template <typename T>
auto host_matrix(T* p, int64_t rows, int64_t cols, int64_t ld) {
  auto r = host_ref(p, {rows, cols});
  r.strides[0] = ld;
  return r;
}

// "F32 [12, 768] cpu": for error messages.
template <typename Byte>
std::string describe(const BasicTensorRef<Byte>& t) {
  std::string s = std::string(dtype_name(t.dtype)) + " [";
  for (int k = 0; k < t.rank; ++k) s += (k ? ", " : "") + std::to_string(t.shape[k]);
  return s + "] " + std::string(device_name(t.device));
}

}  // namespace rexnlu
