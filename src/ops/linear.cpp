#include "ops/linear.h"

#include "backends/cpu/gemm.h"
#include "backends/cpu/gemm_int8.h"
#include "ops/check.h"

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
    default:
      detail::no_kernel(op, be);
  }
}

void linear(backends::Backend& be, ConstTensorRef x, const Linear& w, TensorRef y) {
  constexpr const char* op = "linear";
  const ConstTensorRef W = w.weight;
  detail::expect_matrix(op, "x", x, DType::kF32, be);
  detail::expect_matrix(op, "y", y, DType::kF32, be);
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
        void* scratch = be.workspace().alloc<std::byte>(backends::cpu::linear_int8_scratch_bytes(rows, in));
        backends::cpu::linear_int8(x.f32(), rows, in, reinterpret_cast<const int8_t*>(W.data), w.scale.ref().f32(),
                                   w.scaled_sum.ref().f32(), bias, out, y.f32(), to_int(y.ld()), scratch);
        return;
      }
      detail::expect_matrix(op, "W", W, DType::kF32, be);
      detail::expect(W.ld() == W.cols(), op, "W must be contiguous");
      backends::cpu::linear(x.f32(), rows, in, W.f32(), bias, out, y.f32(), to_int(y.ld()));
      return;
    }
    default:
      detail::no_kernel(op, be);
  }
}

}  // namespace rexnlu::ops
