// LayerNorm over the last dimension, as torch.nn.LayerNorm: biased variance (divide by cols).
#pragma once

namespace rexnlu::backends::cpu {

// y[r] = (s - mean(s)) / sqrt(var(s) + eps) * gamma + beta, with s = x[r] + residual[r]
// (residual may be null). y may alias x or residual. Rows are contiguous (stride cols).
void layer_norm(const float* x, const float* residual, const float* gamma, const float* beta,
                float eps, int rows, int cols, float* y);

}  // namespace rexnlu::backends::cpu
