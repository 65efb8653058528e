#include "ops/layer_norm.h"

#include "backends/cpu/layer_norm.h"
#include "ops/check.h"
#if REXNLU_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/ops.h"
#endif

namespace rexnlu::ops {

void layer_norm(backends::Backend& be, ConstTensorRef x, ConstTensorRef residual, const LayerNormWeights& w,
                TensorRef y, const LayerNormRows& map) {
  constexpr const char* op = "layer_norm";
  const int64_t rows = y.rows(), cols = y.cols();
  const DType x_type = detail::activation_dtype(op, "x", x, be), y_type = detail::activation_dtype(op, "y", y, be);
  detail::expect(x_type == y_type || x_type == DType::kF32, op, "x must be F32 or of y's type");
  const bool gather = !map.x_rows.empty();
  if (gather) {  // a table: any number of rows of y's width
    detail::expect_matrix(op, "x", x, x_type, be);
    detail::expect(x.contiguous() && x.cols() == cols, op, "x (gathered by x_rows) must be contiguous of y's width");
    detail::expect_vector(op, "x_rows", map.x_rows, DType::kI32, rows, be);
    detail::expect(x.data != y.data, op, "y must not alias x when x's rows are gathered");
  } else {
    detail::expect_vector(op, "x", x, x_type, rows * cols, be);
  }
  if (!residual.empty()) detail::expect_vector(op, "residual", residual, x_type, rows * cols, be);
  detail::expect_vector(op, "y", y, y_type, rows * cols, be);
  detail::expect_vector(op, "gamma", w.gamma, DType::kF32, cols, be);
  detail::expect_vector(op, "beta", w.beta, DType::kF32, cols, be);
  if (!map.keep.empty()) detail::expect_vector(op, "keep", map.keep, DType::kU8, rows, be);
  const int32_t* x_rows = gather ? map.x_rows.i32() : nullptr;
  const uint8_t* keep = map.keep.empty() ? nullptr : map.keep.u8();
  switch (be.device()) {
    case Device::kCpu:
      backends::cpu::layer_norm(x.f32(), residual.empty() ? nullptr : residual.f32(), w.gamma.ref().f32(),
                                w.beta.ref().f32(), w.eps, detail::to_int(rows), detail::to_int(cols), y.f32(), x_rows,
                                keep);
      return;
#if REXNLU_HAVE_CUDA
    case Device::kCuda:
      backends::cuda::layer_norm(x_type, y_type, x.data, residual.empty() ? nullptr : residual.data, w.gamma.ref().f32(),
                                 w.beta.ref().f32(), w.eps, detail::to_int(rows), detail::to_int(cols), y.data,
                                 backends::cuda::CudaBackend::of(be).stream(), x_rows, keep);
      return;
#endif
    default:
      detail::no_kernel(op, be);
  }
}

}  // namespace rexnlu::ops
