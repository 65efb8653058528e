#include "backends/cpu/activations.h"

#include <cstdint>

#include "backends/cpu/vec_math.h"

namespace rexnlu::backends::cpu {

void gelu_erf(float* x, size_t n) {
  const auto count = static_cast<int64_t>(n);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) {
    const float v = x[i];
    x[i] = 0.5f * v * (1.0f + fast_erf(v * 0.70710678118654752f));
  }
}

}  // namespace rexnlu::backends::cpu
