// Conv1d with kernel 3, padding 1 (zeros outside the sequence), stride 1, one group, as
// DeBERTa-v2's ConvLayer uses it along the token axis.
#pragma once

#include <cstdint>

namespace rexnlu::backends::cpu {

// y[t, o] = bias[o] + sum_k sum_i taps[k][o, i] * x[t + k - 1, i] over ONE sequence of
// `length` tokens (rows contiguous, stride in / out); packed_taps: three [out, in] tap matrices
// back to back (ops::conv1d_k3_taps). bias may be null. Then, per row, the epilogue: rows with
// keep[t] == 0 (keep may be null) become zeros, the others the exact GELU of y where gelu is set.
void conv1d_k3(const float* x, int length, int in, const float* packed_taps, const float* bias,
               int out, float* y, const uint8_t* keep = nullptr, bool gelu = false);

}  // namespace rexnlu::backends::cpu
