#include "ops/rotary.h"

#include <string>

#include "backends/cpu/rotary.h"
#include "ops/check.h"
#if REXNLU_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/ops.h"
#endif

namespace rexnlu::ops {

void rotary_interleaved(backends::Backend& be, TensorRef x, ConstTensorRef positions, ConstTensorRef freqs) {
  constexpr const char* op = "rotary_interleaved";
  detail::expect_matrix(op, "x", x, DType::kF32, be);
  detail::expect_vector(op, "positions", positions, DType::kI32, x.rows(), be);
  detail::expect_vector(op, "freqs", freqs, DType::kF32, freqs.numel(), be);
  const int64_t dim = 2 * freqs.numel();
  if (dim == 0 || x.cols() % dim != 0)
    detail::fail(op, "x's columns (" + std::to_string(x.cols()) + ") must be a multiple of twice freqs' length (" +
                         std::to_string(dim) + ")");
  const int groups = detail::to_int(x.cols() / dim);
  switch (be.device()) {
    case Device::kCpu:
      backends::cpu::rotary_interleaved(x.f32(), detail::to_int(x.rows()), detail::to_int(dim), groups,
                                        detail::to_int(x.ld()), positions.i32(), freqs.f32());
      return;
#if REXNLU_HAVE_CUDA
    case Device::kCuda:
      backends::cuda::rotary_interleaved(x.f32(), detail::to_int(x.rows()), detail::to_int(dim), groups,
                                         detail::to_int(x.ld()), positions.i32(), freqs.f32(),
                                         backends::cuda::CudaBackend::of(be).stream());
      return;
#endif
    default:
      detail::no_kernel(op, be);
  }
}

}  // namespace rexnlu::ops
