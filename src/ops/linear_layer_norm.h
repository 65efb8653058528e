// The output block of a transformer layer (BERT's SelfOutput and Output): a dense layer, the
// residual, a layer norm.
#pragma once

#include "backends/backend.h"
#include "tensor/tensor.h"

namespace rexnlu::ops {

// y = LayerNorm(x · W^T + bias + residual), as ops::linear into y then ops::layer_norm(y, residual)
// (which is what the CPU runs). x [rows, in] contiguous; residual and y contiguous [rows, out] of
// the activation type; y must alias neither x nor residual.
// On CUDA, where the product alone would give the GPU few output tiles (small batches:
// CudaBackend::linear_parts), it is split over its inputs into F32 partial sums, which the layer
// norm's kernel adds up with the F32 bias and the residual: no split-K reduction kernel, and the
// sum is not rounded to 16 bits before the layer norm (so not the bits of the unsplit path, within
// its rounding). REXNLU_CUDA_SPLIT_K=off keeps the unsplit path everywhere.
void linear_layer_norm(backends::Backend& be, ConstTensorRef x, const Linear& w, ConstTensorRef residual,
                       const LayerNormWeights& ln, TensorRef y);

}  // namespace rexnlu::ops
