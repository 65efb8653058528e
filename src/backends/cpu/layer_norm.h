// LayerNorm over the last dimension, as torch.nn.LayerNorm: biased variance (divide by cols).
#pragma once

#include <cstdint>

namespace rexnlu::backends::cpu {

// y[r] = (s - mean(s)) / sqrt(var(s) + eps) * gamma + beta, with s = x[x_row(r)] + residual[r]
// (residual may be null). Rows are contiguous (stride cols). Optional:
//  - x_rows: x_row(r) = x_rows[r] (x a table whose rows are gathered: the word embeddings; each
//    in range, checked by the caller); null: x_row(r) = r, and y may alias x or residual;
//  - keep: rows with keep[r] == 0 are written as zeros (the input mask), nothing read for them.
void layer_norm(const float* x, const float* residual, const float* gamma, const float* beta,
                float eps, int rows, int cols, float* y, const int32_t* x_rows = nullptr,
                const uint8_t* keep = nullptr);

}  // namespace rexnlu::backends::cpu
