// Matrix products. Matrices are row-major TensorRefs [rows, cols] with a row stride (ld).
#pragma once

#include "backends/backend.h"
#include "tensor/tensor.h"

namespace rexnlu::ops {

// c = alpha * a · op(b) + beta * c; a [M, K]; trans_b: b [N, K] and op(b) = b^T, else b [K, N].
void gemm(backends::Backend& be, ConstTensorRef a, ConstTensorRef b, bool trans_b, float alpha, float beta,
          TensorRef c);

// What linear applies to its output after the bias.
enum class Activation {
  kNone,
  // Exact GELU, as ops::gelu_erf; fused into the product where the kernel can (CPU fp32). On CUDA
  // with a 16-bit y, cuBLASLt's epilogue computes it in the tanh form instead (within 4.7e-4 of
  // erf; REXNLU_CUDA_GELU=erf keeps the exact one: backends::cuda::CudaBackend::gelu_epilogue).
  kGeluErf,
};

// y [rows, out] = act(x [rows, in] · W^T + bias), for the weights in whatever layout the backend
// gave the Linear (Backend::make_linear). y may be a column slice of a wider buffer.
void linear(backends::Backend& be, ConstTensorRef x, const Linear& w, TensorRef y, Activation act = Activation::kNone);

}  // namespace rexnlu::ops
