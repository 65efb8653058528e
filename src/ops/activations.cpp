#include "ops/activations.h"

#include "backends/cpu/activations.h"
#include "ops/check.h"
#if REXNLU_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/ops.h"
#endif

namespace rexnlu::ops {

void gelu_erf(backends::Backend& be, TensorRef x) {
  constexpr const char* op = "gelu_erf";
  const DType type = detail::activation_dtype(op, "x", x, be);
  if (x.contiguous()) {
    detail::expect_vector(op, "x", x, type, x.numel(), be);
  } else {  // rows of a wider matrix (linear's output into a column block)
    detail::expect_matrix(op, "x", x, type, be);
  }
  const auto rows = static_cast<size_t>(x.contiguous() ? 1 : x.rows());
  const auto cols = static_cast<size_t>(x.contiguous() ? x.numel() : x.cols());
  const auto ld = x.contiguous() ? cols : static_cast<size_t>(x.ld());
  switch (be.device()) {
    case Device::kCpu:
      for (size_t r = 0; r < rows; ++r) backends::cpu::gelu_erf(x.f32() + r * ld, cols);
      return;
#if REXNLU_HAVE_CUDA
    case Device::kCuda:
      backends::cuda::gelu_erf_rows(type, x.data, rows, cols, ld, backends::cuda::CudaBackend::of(be).stream());
      return;
#endif
    default:
      detail::no_kernel(op, be);
  }
}

}  // namespace rexnlu::ops
