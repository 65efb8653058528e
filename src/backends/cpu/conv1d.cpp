#include "backends/cpu/conv1d.h"

#include <algorithm>
#include <cstddef>

#include "backends/cpu/activations.h"
#include "backends/cpu/gemm.h"

namespace rexnlu::backends::cpu {

void conv1d_k3(const float* x, int length, int in, const float* packed_taps, const float* bias,
               int out, float* y, const uint8_t* keep, bool gelu) {
  const size_t tap = static_cast<size_t>(out) * in;
  // Centre tap: y = x · W1^T (+ bias).
  linear(x, length, in, packed_taps + tap, nullptr, 0, bias, out, y, out);
  if (length >= 2) {
    // Tap 0 reads the previous token: y[1:] += x[:-1] · W0^T (y[0] sees the zero padding).
    gemm(true, length - 1, out, in, 1.0f, x, in, packed_taps, in, 1.0f, y + out, out);
    // Tap 2 reads the next token: y[:-1] += x[1:] · W2^T.
    gemm(true, length - 1, out, in, 1.0f, x + in, in, packed_taps + 2 * tap, in, 1.0f, y, out);
  }
  if (!keep && !gelu) return;
#pragma omp parallel for schedule(static)
  for (int t = 0; t < length; ++t) {
    float* row = y + static_cast<size_t>(t) * out;
    if (keep && keep[t] == 0) std::fill_n(row, out, 0.0f);
    else if (gelu) gelu_erf_rows(row, 1, out, out);
  }
}

}  // namespace rexnlu::backends::cpu
