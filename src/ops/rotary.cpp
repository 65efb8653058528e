#include "ops/rotary.h"

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
  detail::expect(x.cols() % 2 == 0, op, "x needs an even number of columns");
  detail::expect_vector(op, "positions", positions, DType::kI32, x.rows(), be);
  detail::expect_vector(op, "freqs", freqs, DType::kF32, x.cols() / 2, be);
  switch (be.device()) {
    case Device::kCpu:
      backends::cpu::rotary_interleaved(x.f32(), detail::to_int(x.rows()), detail::to_int(x.cols()),
                                        detail::to_int(x.ld()), positions.i32(), freqs.f32());
      return;
#if REXNLU_HAVE_CUDA
    case Device::kCuda:
      backends::cuda::rotary_interleaved(x.f32(), detail::to_int(x.rows()), detail::to_int(x.cols()),
                                         detail::to_int(x.ld()), positions.i32(), freqs.f32(),
                                         backends::cuda::CudaBackend::of(be).stream());
      return;
#endif
    default:
      detail::no_kernel(op, be);
  }
}

}  // namespace rexnlu::ops
