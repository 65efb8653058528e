// Rotary position embedding over all dims with ADJACENT pairs (GPT-J style, spec section 4):
//   theta_m = pos * freqs[m], m = 0..dim/2-1
//   y[2m]   = x[2m] cos(theta_m) - x[2m+1] sin(theta_m)
//   y[2m+1] = x[2m+1] cos(theta_m) + x[2m] sin(theta_m)
#pragma once

#include <cstdint>

namespace rexnlu::backends::cpu {

// In place on x[rows, dim] (row stride ld); positions[rows]; freqs[dim/2]. dim must be even.
void rotary_interleaved(float* x, int rows, int dim, int ld, const int32_t* positions,
                        const float* freqs);

}  // namespace rexnlu::backends::cpu
