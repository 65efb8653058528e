#include "ops/conv1d.h"

#include <cstddef>

#include "backends/cpu/conv1d.h"
#include "ops/check.h"
#if REXNLU_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/ops.h"
#endif

namespace rexnlu::ops {

std::vector<float> conv1d_k3_taps(const float* weight, int64_t out, int64_t in) {
  std::vector<float> taps(static_cast<size_t>(3 * out * in));
  for (int64_t k = 0; k < 3; ++k)
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i) taps[static_cast<size_t>((k * out + o) * in + i)] = weight[(o * in + i) * 3 + k];
  return taps;
}

void conv1d_k3(backends::Backend& be, ConstTensorRef x, const Conv1dK3Weights& w, TensorRef y) {
  constexpr const char* op = "conv1d_k3";
  const ConstTensorRef taps = w.taps;
  detail::expect(taps.rank == 3 && taps.shape[0] == 3 && taps.contiguous(), op, "taps must be contiguous [3, out, in]");
  const int64_t out = taps.shape[1], in = taps.shape[2], L = x.rows();
  detail::expect_vector(op, "taps", taps, DType::kF32, 3 * out * in, be);
  detail::expect_vector(op, "x", x, DType::kF32, L * in, be);
  detail::expect_vector(op, "y", y, DType::kF32, L * out, be);
  if (!w.bias.empty()) detail::expect_vector(op, "bias", w.bias, DType::kF32, out, be);
  switch (be.device()) {
    case Device::kCpu:
      backends::cpu::conv1d_k3(x.f32(), detail::to_int(L), detail::to_int(in), taps.f32(),
                               w.bias.empty() ? nullptr : w.bias.ref().f32(), detail::to_int(out), y.f32());
      return;
#if REXNLU_HAVE_CUDA
    case Device::kCuda: {
      // The three taps as one product x · taps^T ([3*out, in]), then their shifted sum.
      auto& cb = backends::cuda::CudaBackend::of(be);
      const Workspace::Frame frame(be.workspace());
      float* tap_sums = be.workspace().alloc<float>(static_cast<size_t>(L * 3 * out));
      backends::cuda::GemmArgs g;
      g.M = detail::to_int(L);
      g.N = detail::to_int(3 * out);
      g.K = detail::to_int(in);
      g.A = x.data;
      g.lda = g.K;
      g.B = taps.data;
      g.ldb = g.K;
      g.C = tap_sums;
      g.ldc = g.N;
      cb.gemm(g);
      backends::cuda::conv1d_k3_combine(DType::kF32, tap_sums, cb.one_sequence(g.M, nullptr, nullptr),
                                        detail::to_int(out), w.bias.empty() ? nullptr : w.bias.ref().f32(), y.data,
                                        cb.stream());
      return;
    }
#endif
    default:
      detail::no_kernel(op, be);
  }
}

}  // namespace rexnlu::ops
