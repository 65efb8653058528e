// Matrix products. Matrices are row-major TensorRefs [rows, cols] with a row stride (ld).
#pragma once

#include "backends/backend.h"
#include "tensor/tensor.h"

namespace rexnlu::ops {

// c = alpha * a · op(b) + beta * c; a [M, K]; trans_b: b [N, K] and op(b) = b^T, else b [K, N].
void gemm(backends::Backend& be, ConstTensorRef a, ConstTensorRef b, bool trans_b, float alpha, float beta,
          TensorRef c);

// y [rows, out] = x [rows, in] · W^T + bias, for the weights in whatever layout the backend gave
// the Linear (Backend::make_linear). y may be a column slice of a wider buffer.
void linear(backends::Backend& be, ConstTensorRef x, const Linear& w, TensorRef y);

}  // namespace rexnlu::ops
