#include "ops/tensor_ops.h"

#include <algorithm>
#include <cstddef>

#include "ops/check.h"
#if REXNLU_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/ops.h"
#endif

namespace rexnlu::ops {

void embedding(backends::Backend& be, ConstTensorRef table, ConstTensorRef ids, TensorRef out) {
  constexpr const char* op = "embedding";
  const int64_t T = out.rows(), width = table.cols();
  detail::expect_matrix(op, "table", table, DType::kF32, be);
  detail::expect(table.ld() == width, op, "table must be contiguous");
  detail::expect_vector(op, "ids", ids, DType::kI32, T, be);
  detail::expect_vector(op, "out", out, DType::kF32, T * width, be);
  switch (be.device()) {
    case Device::kCpu: {
      const size_t H = static_cast<size_t>(width);
      for (int64_t t = 0; t < T; ++t)
        std::copy_n(table.f32() + static_cast<size_t>(ids.i32()[t]) * H, H, out.f32() + static_cast<size_t>(t) * H);
      return;
    }
#if REXNLU_HAVE_CUDA
    case Device::kCuda:
      backends::cuda::embedding(table.f32(), ids.i32(), detail::to_int(T), detail::to_int(width), out.f32(),
                                backends::cuda::CudaBackend::of(be).stream());
      return;
#endif
    default:
      detail::no_kernel(op, be);
  }
}

void copy(backends::Backend& be, ConstTensorRef src, TensorRef dst) {
  constexpr const char* op = "copy";
  const DType from = detail::activation_dtype(op, "src", src, be), to = detail::activation_dtype(op, "dst", dst, be);
  detail::expect_vector(op, "src", src, from, dst.numel(), be);
  detail::expect_vector(op, "dst", dst, to, dst.numel(), be);
  switch (be.device()) {
    case Device::kCpu:  // F32 only (the CPU's activation type)
      std::copy_n(src.f32(), dst.numel(), dst.f32());
      return;
#if REXNLU_HAVE_CUDA
    case Device::kCuda:
      backends::cuda::convert(from, src.data, to, dst.data, static_cast<size_t>(dst.numel()),
                              backends::cuda::CudaBackend::of(be).stream());
      return;
#endif
    default:
      detail::no_kernel(op, be);
  }
}

void zero_rows(backends::Backend& be, TensorRef x, ConstTensorRef keep) {
  constexpr const char* op = "zero_rows";
  const int64_t rows = x.rows(), width = x.cols();
  const DType type = detail::activation_dtype(op, "x", x, be);
  detail::expect_vector(op, "x", x, type, rows * width, be);
  detail::expect_vector(op, "keep", keep, DType::kU8, rows, be);
  switch (be.device()) {
    case Device::kCpu:
      for (int64_t r = 0; r < rows; ++r)
        if (keep.u8()[r] == 0) std::fill_n(x.f32() + r * width, width, 0.0f);
      return;
#if REXNLU_HAVE_CUDA
    case Device::kCuda:
      backends::cuda::zero_rows(type, x.data, keep.u8(), detail::to_int(rows), detail::to_int(width),
                                backends::cuda::CudaBackend::of(be).stream());
      return;
#endif
    default:
      detail::no_kernel(op, be);
  }
}

}  // namespace rexnlu::ops
