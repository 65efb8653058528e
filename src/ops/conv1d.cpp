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

namespace {

// The three taps as one product x · taps^T ([3*out, in]) over all rows, then their shifted sum
// within each sequence of `batch`.
#if REXNLU_HAVE_CUDA
void conv1d_k3_cuda(backends::Backend& be, ConstTensorRef x, const Conv1dK3Weights& w, TensorRef y,
                    const backends::cuda::DeviceBatch& batch, const Conv1dK3Epilogue& epilogue) {
  auto& cb = backends::cuda::CudaBackend::of(be);
  const int64_t out = w.taps.ref().shape[1], in = w.taps.ref().shape[2], rows = x.rows();
  // x, the taps and y share x's type (check_conv); the three products are kept in fp32 and summed
  // in fp32, so y is rounded once.
  float* tap_sums = be.workspace().alloc<float>(static_cast<size_t>(rows * 3 * out));
  backends::cuda::GemmArgs g;
  g.M = detail::to_int(rows);
  g.N = detail::to_int(3 * out);
  g.K = detail::to_int(in);
  g.A = x.data;
  g.lda = g.K;
  g.B = w.taps.ref().data;
  g.ldb = g.K;
  g.ab_type = x.dtype;
  g.C = tap_sums;
  g.ldc = g.N;
  g.c_type = DType::kF32;
  cb.gemm(g);
  backends::cuda::conv1d_k3_combine(DType::kF32, y.dtype, tap_sums, batch, detail::to_int(out),
                                    w.bias.empty() ? nullptr : w.bias.ref().f32(), y.data, cb.stream(),
                                    epilogue.keep.empty() ? nullptr : epilogue.keep.u8(), epilogue.gelu_erf);
}
#endif

void check_conv(const char* op, ConstTensorRef x, const Conv1dK3Weights& w, TensorRef y, const Conv1dK3Epilogue& epilogue,
                const backends::Backend& be) {
  const ConstTensorRef taps = w.taps;
  detail::expect(taps.rank == 3 && taps.shape[0] == 3 && taps.contiguous(), op, "taps must be contiguous [3, out, in]");
  const int64_t out = taps.shape[1], in = taps.shape[2], L = x.rows();
  const DType type = detail::activation_dtype(op, "x", x, be);  // of x, y and the taps
  detail::expect_vector(op, "taps", taps, type, 3 * out * in, be);
  detail::expect_vector(op, "x", x, type, L * in, be);
  detail::expect_vector(op, "y", y, type, L * out, be);
  if (!w.bias.empty()) detail::expect_vector(op, "bias", w.bias, DType::kF32, out, be);
  if (!epilogue.keep.empty()) detail::expect_vector(op, "keep", epilogue.keep, DType::kU8, L, be);
}

}  // namespace

void conv1d_k3(backends::Backend& be, ConstTensorRef x, const Conv1dK3Weights& w, TensorRef y,
               const Conv1dK3Epilogue& epilogue) {
  constexpr const char* op = "conv1d_k3";
  check_conv(op, x, w, y, epilogue, be);
  const ConstTensorRef taps = w.taps;
  const int64_t out = taps.shape[1], in = taps.shape[2], L = x.rows();
  switch (be.device()) {
    case Device::kCpu:
      backends::cpu::conv1d_k3(x.f32(), detail::to_int(L), detail::to_int(in), taps.f32(),
                               w.bias.empty() ? nullptr : w.bias.ref().f32(), detail::to_int(out), y.f32(),
                               epilogue.keep.empty() ? nullptr : epilogue.keep.u8(), epilogue.gelu_erf);
      return;
#if REXNLU_HAVE_CUDA
    case Device::kCuda: {
      auto& cb = backends::cuda::CudaBackend::of(be);
      const Workspace::Frame frame(be.workspace());
      conv1d_k3_cuda(be, x, w, y, cb.one_sequence(detail::to_int(L), nullptr, nullptr), epilogue);
      return;
    }
#endif
    default:
      detail::no_kernel(op, be);
  }
}

void conv1d_k3(backends::Backend& be, ConstTensorRef x, const Conv1dK3Weights& w, TensorRef y,
               const PackedSequences& seqs, const Conv1dK3Epilogue& epilogue) {
  constexpr const char* op = "conv1d_k3 (packed)";
  check_conv(op, x, w, y, epilogue, be);
  const std::vector<int64_t>& offsets = seqs.offsets;
  detail::expect(offsets.back() == x.rows(), op, "the sequences' rows must add up to the row count of x");
#if REXNLU_HAVE_CUDA
  if (be.device() == Device::kCuda) {
    const Workspace::Frame frame(be.workspace());
    conv1d_k3_cuda(be, x, w, y, device_batch(seqs, nullptr), epilogue);
    return;
  }
#endif
  for (size_t b = 0; b + 1 < offsets.size(); ++b) {
    const int64_t row0 = offsets[b], len = offsets[b + 1] - offsets[b];
    Conv1dK3Epilogue part = epilogue;
    if (!part.keep.empty()) part.keep = part.keep.slice(row0, len);
    conv1d_k3(be, x.slice(row0, len), w, y.slice(row0, len), part);
  }
}

}  // namespace rexnlu::ops
