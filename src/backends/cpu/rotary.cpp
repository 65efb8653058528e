#include "backends/cpu/rotary.h"

#include <cmath>

namespace rexnlu::backends::cpu {

void rotary_interleaved(float* x, int rows, int dim, int groups, int ld, const int32_t* positions,
                        const float* freqs) {
  const int half = dim / 2;
#pragma omp parallel for schedule(static)
  for (int r = 0; r < rows; ++r) {
    float* xr = x + static_cast<size_t>(r) * ld;
    const double pos = positions[r];
    for (int m = 0; m < half; ++m) {
      // theta in double: angles reach 511 rad, where a float product already loses 3e-5.
      const double theta = pos * static_cast<double>(freqs[m]);
      const auto c = static_cast<float>(std::cos(theta));
      const auto s = static_cast<float>(std::sin(theta));
      for (int g = 0; g < groups; ++g) {
        float* xg = xr + static_cast<size_t>(g) * dim;
        const float a = xg[2 * m];
        const float b = xg[2 * m + 1];
        xg[2 * m] = a * c - b * s;
        xg[2 * m + 1] = b * c + a * s;
      }
    }
  }
}

}  // namespace rexnlu::backends::cpu
