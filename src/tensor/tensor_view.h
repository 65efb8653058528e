// A read-only view of a tensor's bytes, owned elsewhere (a mapped checkpoint file, a buffer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace rexnlu {

struct TensorView {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // row-major, outermost first; {} is a scalar
  const std::byte* data = nullptr;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  const float* f32() const { return reinterpret_cast<const float*>(data); }  // caller checked dtype
};

// "[12804, 768]": for error messages.
std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace rexnlu
