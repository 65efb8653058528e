#include "ops/linear_layer_norm.h"

#include "ops/check.h"
#include "ops/layer_norm.h"
#include "ops/linear.h"
#if REXNLU_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/ops.h"
#include "ops/cuda_verify.h"
#endif

namespace rexnlu::ops {

namespace {

#if REXNLU_HAVE_CUDA
// The split path (linear_layer_norm.h); false where it does not apply (then the plain one runs).
bool cuda_split_linear_layer_norm(backends::Backend& be, ConstTensorRef x, const Linear& w, ConstTensorRef residual,
                                  const LayerNormWeights& ln, TensorRef y) {
  auto& cb = backends::cuda::CudaBackend::of(be);
  const ConstTensorRef W = w.weight;
  const int64_t rows = x.rows(), in = x.cols(), out = y.cols();
  const int parts = cb.linear_parts(rows, out, in);
  // The 16-byte layer-norm kernel's rows (cuda::layer_norm), x of W's type (16-bit activations, or
  // fp32 throughout), and not under REXNLU_CUDA_VERIFY (which checks each product as ops::linear made it).
  if (parts < 2 || x.dtype != W.dtype || W.device != Device::kCuda || !W.contiguous() || W.ld() != W.cols() ||
      !x.contiguous() || !y.contiguous() || residual.empty() || residual.dtype != y.dtype || out % 8 != 0 ||
      out > 1024 || ops::cuda_verify::enabled())
    return false;
  const Workspace::Frame frame(be.workspace());
  const TensorRef sums = be.alloc(DType::kF32, {parts, rows, out});
  backends::cuda::GemmArgs g;
  g.M = detail::to_int(rows);
  g.N = detail::to_int(out);
  g.K = detail::to_int(in / parts);
  g.A = x.data;
  g.lda = detail::to_int(in);
  g.B = W.data;
  g.ldb = detail::to_int(in);
  g.ab_type = W.dtype;
  g.C = sums.data;
  g.ldc = g.N;
  g.c_type = DType::kF32;
  g.batch = parts;
  g.batch_stride_a = g.batch_stride_b = g.K;  // part p: inputs [p K, (p + 1) K) of every row
  g.batch_stride_c = rows * out;
  cb.gemm(g);
  backends::cuda::LayerNormParts sum;
  sum.parts = parts;
  sum.part_stride = static_cast<size_t>(rows * out);
  sum.bias = w.bias.empty() ? nullptr : w.bias.ref().f32();
  backends::cuda::layer_norm(DType::kF32, y.dtype, sums.data, residual.data, ln.gamma.ref().f32(), ln.beta.ref().f32(),
                             ln.eps, detail::to_int(rows), detail::to_int(out), y.data, cb.stream(), nullptr, nullptr,
                             sum);
  return true;
}
#endif

}  // namespace

void linear_layer_norm(backends::Backend& be, ConstTensorRef x, const Linear& w, ConstTensorRef residual,
                       const LayerNormWeights& ln, TensorRef y) {
  constexpr const char* op = "linear_layer_norm";
  detail::expect(x.data != y.data && residual.data != y.data, op, "y must alias neither x nor residual");
  detail::expect(residual.empty() || (residual.rows() == y.rows() && residual.cols() == y.cols()), op,
                 "residual must have y's shape");
#if REXNLU_HAVE_CUDA
  if (be.device() == Device::kCuda) {
    // linear's and layer_norm's own checks, on the arguments as the plain path would pass them
    detail::expect_matrix(op, "x", x, detail::activation_dtype(op, "x", x, be), be);
    detail::expect_matrix(op, "y", y, detail::activation_dtype(op, "y", y, be), be);
    detail::expect(x.cols() == w.in_features() && y.cols() == w.out_features() && x.rows() == y.rows(), op,
                   "shapes of x, W and y do not match");
    detail::expect_vector(op, "gamma", ln.gamma, DType::kF32, y.cols(), be);
    detail::expect_vector(op, "beta", ln.beta, DType::kF32, y.cols(), be);
    if (!w.bias.empty()) detail::expect_vector(op, "bias", w.bias, DType::kF32, w.out_features(), be);
    if (cuda_split_linear_layer_norm(be, x, w, residual, ln, y)) return;
  }
#endif
  linear(be, x, w, y);
  layer_norm(be, y, residual, ln, y);
}

}  // namespace rexnlu::ops
