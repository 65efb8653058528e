// Rotary position embedding over all dims with ADJACENT pairs (GPT-J style, spec section 4):
//   theta_m = pos * freqs[m], m = 0..dim/2-1
//   y[2m]   = x[2m] cos(theta_m) - x[2m+1] sin(theta_m)
//   y[2m+1] = x[2m+1] cos(theta_m) + x[2m] sin(theta_m)
#pragma once

#include <cstdint>

namespace rexnlu::backends::cpu {

// In place on x[rows, groups * dim] (row stride ld): each of the `groups` blocks of dim columns
// turned by the same angles (the link head's q | k: 2 groups, one angle per pair for both);
// positions[rows]; freqs[dim/2]. dim must be even.
void rotary_interleaved(float* x, int rows, int dim, int groups, int ld, const int32_t* positions,
                        const float* freqs);

}  // namespace rexnlu::backends::cpu
