#include "backends/cpu/activations.h"

#include <cstdint>

#include "backends/cpu/vec_math.h"

namespace rexnlu::backends::cpu {

namespace {
inline float gelu(float v) { return 0.5f * v * (1.0f + fast_erf(v * 0.70710678118654752f)); }
}  // namespace

void gelu_erf(float* x, size_t n) {
  const auto count = static_cast<int64_t>(n);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) x[i] = gelu(x[i]);
}

void gelu_erf_rows(float* x, int rows, int cols, int ld) {
  for (int r = 0; r < rows; ++r) {
    float* row = x + static_cast<size_t>(r) * ld;
#pragma omp simd
    for (int c = 0; c < cols; ++c) row[c] = gelu(row[c]);
  }
}

}  // namespace rexnlu::backends::cpu
