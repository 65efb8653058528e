#include "ops/linear.h"

#include "backends/cpu/gemm.h"
#include "backends/cpu/gemm_bf16.h"
#include "backends/cpu/gemm_int8.h"
#include "ops/activations.h"
#include "ops/check.h"
#if REXNLU_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/ops.h"
#include "ops/cuda_verify.h"
#endif

namespace rexnlu::ops {

using detail::to_int;

void gemm(backends::Backend& be, ConstTensorRef a, ConstTensorRef b, bool trans_b, float alpha, float beta,
          TensorRef c) {
  constexpr const char* op = "gemm";
  detail::expect_matrix(op, "a", a, DType::kF32, be);
  detail::expect_matrix(op, "b", b, DType::kF32, be);
  detail::expect_matrix(op, "c", c, DType::kF32, be);
  const int64_t M = c.rows(), N = c.cols(), K = a.cols();
  detail::expect(a.rows() == M && (trans_b ? b.rows() == N && b.cols() == K : b.rows() == K && b.cols() == N), op,
                 "shapes of a, b and c do not match");
  switch (be.device()) {
    case Device::kCpu:
      backends::cpu::gemm(trans_b, to_int(M), to_int(N), to_int(K), alpha, a.f32(), to_int(a.ld()), b.f32(),
                          to_int(b.ld()), beta, c.f32(), to_int(c.ld()));
      return;
#if REXNLU_HAVE_CUDA
    case Device::kCuda: {
      backends::cuda::GemmArgs g;
      g.trans_b = trans_b;
      g.M = to_int(M);
      g.N = to_int(N);
      g.K = to_int(K);
      g.alpha = alpha;
      g.beta = beta;
      g.A = a.data;
      g.lda = to_int(a.ld());
      g.B = b.data;
      g.ldb = to_int(b.ld());
      g.C = c.data;
      g.ldc = to_int(c.ld());
      backends::cuda::CudaBackend::of(be).gemm(g);
      return;
    }
#endif
    default:
      detail::no_kernel(op, be);
  }
}

void linear(backends::Backend& be, ConstTensorRef x, const Linear& w, TensorRef y, Activation act) {
  constexpr const char* op = "linear";
  const ConstTensorRef W = w.weight;
  detail::expect_matrix(op, "x", x, detail::activation_dtype(op, "x", x, be), be);
  detail::expect_matrix(op, "y", y, detail::activation_dtype(op, "y", y, be), be);
  detail::expect(x.cols() == w.in_features() && y.cols() == w.out_features() && x.rows() == y.rows(), op,
                 "shapes of x, W and y do not match");
  detail::expect(x.contiguous(), op, "x must be contiguous");
  if (!w.bias.empty()) detail::expect_vector(op, "bias", w.bias, DType::kF32, w.out_features(), be);
  switch (be.device()) {
    case Device::kCpu: {
      const int rows = to_int(x.rows()), in = to_int(x.cols()), out = to_int(w.out_features());
      const float* bias = w.bias.empty() ? nullptr : w.bias.ref().f32();
      if (W.dtype == DType::kI8) {  // --precision int8 (backends/cpu/gemm_int8.h)
        detail::expect_matrix(op, "W", W, DType::kI8, be);
        detail::expect(W.ld() == W.cols(), op, "W must be contiguous");
        detail::expect_vector(op, "scale", w.scale, DType::kF32, w.out_features(), be);
        detail::expect_vector(op, "scaled_sum", w.scaled_sum, DType::kF32, w.out_features(), be);
        const Workspace::Frame frame(be.workspace());
        void* scratch = be.workspace().alloc<std::byte>(backends::cpu::linear_int8_scratch_bytes(rows, in, out));
        backends::cpu::linear_int8(x.f32(), rows, in, reinterpret_cast<const int8_t*>(W.data), w.prepared.get(),
                                   w.scale.ref().f32(), w.scaled_sum.ref().f32(), bias, out, y.f32(), to_int(y.ld()),
                                   scratch, act == Activation::kGeluErf);
        return;  // activation fused
      }
      if (W.dtype == DType::kBF16) {  // --precision bf16 (backends/cpu/gemm_bf16.h)
        detail::expect_matrix(op, "W", W, DType::kBF16, be);
        detail::expect(W.ld() == W.cols(), op, "W must be contiguous");
        const Workspace::Frame frame(be.workspace());
        void* scratch = be.workspace().alloc<std::byte>(
            backends::cpu::linear_bf16_scratch_bytes(rows, in, out, w.prepared != nullptr));
        backends::cpu::linear_bf16(x.f32(), rows, in, reinterpret_cast<const uint16_t*>(W.data), w.prepared.get(), bias,
                                   out, y.f32(), to_int(y.ld()), scratch);
        break;
      }
      if (w.has_plain_weight()) {
        detail::expect_matrix(op, "W", W, DType::kF32, be);
        detail::expect(W.ld() == W.cols(), op, "W must be contiguous");
      } else {  // fp32 W held only in the kernel's packed layout (backends/cpu/gemm.h)
        detail::expect(W.dtype == DType::kF32 && w.prepared != nullptr, op, "W has neither F32 data nor a packed copy");
      }
      backends::cpu::linear(x.f32(), rows, in, W.f32(), w.prepared.get(), to_int(w.prepared_first), bias, out,
                            y.f32(), to_int(y.ld()), act == Activation::kGeluErf);
      return;  // activation fused
    }
#if REXNLU_HAVE_CUDA
    case Device::kCuda: {
      // F16 / BF16 weights: x and y are F32 or of W's type (16-bit activations); an F32 x is rounded
      // to W's type first; the product accumulates in fp32 and writes y's type, bias included.
      auto& cb = backends::cuda::CudaBackend::of(be);
      detail::expect(W.device == Device::kCuda && W.ld() == W.cols() && W.contiguous(), op, "W must be contiguous on the device");
      detail::expect(x.dtype == DType::kF32 || x.dtype == W.dtype, op, "x must be F32 or of W's type");
      detail::expect(y.dtype == DType::kF32 || y.dtype == W.dtype, op, "y must be F32 or of W's type");
      const Tensor& bias = y.dtype == DType::kF32 ? w.bias : w.bias_16;
      detail::expect(w.bias.empty() || !bias.empty(), op, "the layer has no bias of y's type");
      if (!bias.empty()) detail::expect_vector(op, "bias", bias, y.dtype, w.out_features(), be);
      const Workspace::Frame frame(be.workspace());
      backends::cuda::GemmArgs g;
      g.M = to_int(x.rows());
      g.N = to_int(w.out_features());
      g.K = to_int(x.cols());
      g.A = x.data;
      g.lda = g.K;
      g.ab_type = W.dtype;
      if (x.dtype != W.dtype) {
        void* rounded = be.workspace().alloc<std::byte>(static_cast<size_t>(x.numel()) * dtype_size(W.dtype));
        backends::cuda::convert(x.dtype, x.data, W.dtype, rounded, static_cast<size_t>(x.numel()), cb.stream());
        g.A = rounded;
      }
      g.B = W.data;
      g.ldb = g.K;
      g.C = y.data;
      g.ldc = to_int(y.ld());
      g.c_type = y.dtype;
      g.bias = bias.empty() ? nullptr : bias.ref().data;
      // 16-bit y: the GELU in cuBLASLt's epilogue, tanh form, unless REXNLU_CUDA_GELU=erf
      // (CudaBackend::gelu_epilogue); F32 y: the exact GELU after the product, below.
      g.gelu_tanh = act == Activation::kGeluErf && y.dtype != DType::kF32 && cb.gelu_epilogue();
      cb.gemm(g);
      if (cb.verifies_ops()) ops::cuda_verify::linear(g, cb.stream());
      if (g.gelu_tanh) return;  // activation fused
      break;
    }
#endif
    default:
      detail::no_kernel(op, be);
  }
  if (act == Activation::kGeluErf) gelu_erf(be, y);  // the kernels above have no fused activation
}

}  // namespace rexnlu::ops
