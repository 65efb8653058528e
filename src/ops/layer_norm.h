// LayerNorm over the last dimension, as torch.nn.LayerNorm: biased variance (divide by cols).
#pragma once

#include "backends/backend.h"
#include "tensor/tensor.h"

namespace rexnlu::ops {

// Optional row maps of layer_norm (either, both or neither):
struct LayerNormRows {
  // I32 [rows]: row r normalizes x's row x_rows[r] (each in [0, x's rows), checked by the caller):
  // the embedding gather fused in, x a contiguous table [any rows, width] (the word embeddings).
  // y must not alias x then.
  ConstTensorRef x_rows{};
  // U8 [rows]: rows with keep[r] == 0 are written as zeros (the input mask), the others as without it.
  ConstTensorRef keep{};
};

// y[r] = (s - mean(s)) / sqrt(var(s) + eps) * gamma + beta, s = x[r] + residual[r] (residual may
// be empty). x, residual, y: contiguous [rows, width]; y may alias x or residual. All F32, or all
// of the backend's activation type, or x and residual F32 and y of that type (statistics in fp32).
void layer_norm(backends::Backend& be, ConstTensorRef x, ConstTensorRef residual, const LayerNormWeights& w,
                TensorRef y, const LayerNormRows& rows = {});

}  // namespace rexnlu::ops
