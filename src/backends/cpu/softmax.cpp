#include "backends/cpu/softmax.h"

#include <limits>

#include "backends/cpu/vec_math.h"

namespace rexnlu::backends::cpu {

void masked_softmax(float* scores, int rows, int cols, int ld, const uint8_t* mask, int ld_mask) {
  for (int r = 0; r < rows; ++r) {
    float* s = scores + static_cast<size_t>(r) * ld;
    const uint8_t* m = mask + static_cast<size_t>(r) * ld_mask;
    // Masked entries are -inf for the max and 0 after exp: exactly what filling them with
    // finfo.min does whenever at least one entry of the row is kept.
    float mx = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : mx)
    for (int c = 0; c < cols; ++c) mx = m[c] ? (s[c] > mx ? s[c] : mx) : mx;
    if (mx == -std::numeric_limits<float>::infinity()) {  // fully masked row -> zeros
      for (int c = 0; c < cols; ++c) s[c] = 0.0f;
      continue;
    }
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int c = 0; c < cols; ++c) {
      const float e = m[c] ? fast_exp(s[c] - mx) : 0.0f;
      s[c] = e;
      sum += e;
    }
    const float inv = 1.0f / sum;
#pragma omp simd
    for (int c = 0; c < cols; ++c) s[c] *= inv;
  }
}

}  // namespace rexnlu::backends::cpu
