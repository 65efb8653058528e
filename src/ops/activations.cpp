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
  detail::expect_vector(op, "x", x, DType::kF32, x.numel(), be);
  switch (be.device()) {
    case Device::kCpu:
      backends::cpu::gelu_erf(x.f32(), static_cast<size_t>(x.numel()));
      return;
#if REXNLU_HAVE_CUDA
    case Device::kCuda:
      backends::cuda::gelu_erf(DType::kF32, x.data, static_cast<size_t>(x.numel()), backends::cuda::CudaBackend::of(be).stream());
      return;
#endif
    default:
      detail::no_kernel(op, be);
  }
}

}  // namespace rexnlu::ops
