// LayerNorm over the last dimension, as torch.nn.LayerNorm: biased variance (divide by cols).
#pragma once

#include "backends/backend.h"
#include "tensor/tensor.h"

namespace rexnlu::ops {

// y[r] = (s - mean(s)) / sqrt(var(s) + eps) * gamma + beta, s = x[r] + residual[r] (residual may
// be empty). x, residual, y: contiguous [rows, width]; y may alias x or residual. All F32, or all
// of the backend's activation type, or x and residual F32 and y of that type (statistics in fp32).
void layer_norm(backends::Backend& be, ConstTensorRef x, ConstTensorRef residual, const LayerNormWeights& w,
                TensorRef y);

}  // namespace rexnlu::ops
