#include "backends/cpu/layer_norm.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace rexnlu::backends::cpu {

void layer_norm(const float* x, const float* residual, const float* gamma, const float* beta,
                float eps, int rows, int cols, float* y, const int32_t* x_rows, const uint8_t* keep) {
#pragma omp parallel for schedule(static)
  for (int r = 0; r < rows; ++r) {
    float* yr = y + static_cast<size_t>(r) * cols;
    if (keep && keep[r] == 0) {
      std::fill_n(yr, cols, 0.0f);
      continue;
    }
    const float* xr = x + static_cast<size_t>(x_rows ? x_rows[r] : r) * cols;
    const float* rr = residual ? residual + static_cast<size_t>(r) * cols : nullptr;
    float sum = 0.0f;
    if (rr) {
#pragma omp simd reduction(+ : sum)
      for (int c = 0; c < cols; ++c) {
        yr[c] = xr[c] + rr[c];
        sum += yr[c];
      }
    } else {
#pragma omp simd reduction(+ : sum)
      for (int c = 0; c < cols; ++c) {
        yr[c] = xr[c];
        sum += yr[c];
      }
    }
    const float mean = sum / static_cast<float>(cols);
    float sq = 0.0f;  // two passes: the one-pass formula loses digits when |mean| >> std
#pragma omp simd reduction(+ : sq)
    for (int c = 0; c < cols; ++c) {
      const float d = yr[c] - mean;
      sq += d * d;
    }
    const float inv_std = 1.0f / std::sqrt(sq / static_cast<float>(cols) + eps);
#pragma omp simd
    for (int c = 0; c < cols; ++c) yr[c] = (yr[c] - mean) * inv_std * gamma[c] + beta[c];
  }
}

}  // namespace rexnlu::backends::cpu
