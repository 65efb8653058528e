// Rotary position embedding over all dims with ADJACENT pairs (GPT-J style, spec section 4):
//   theta_m = pos * freqs[m], m = 0..dim/2-1
//   y[2m]   = x[2m] cos(theta_m) - x[2m+1] sin(theta_m)
//   y[2m+1] = x[2m+1] cos(theta_m) + x[2m] sin(theta_m)
#pragma once

#include "backends/backend.h"

namespace rexnlu::ops {

// In place on x [rows, groups * dim] (any row stride, dim = 2 x freqs' length): every block of dim
// columns turned by the same angles (the link head turns q | k in one call); positions: I32 [rows];
// freqs: F32 [dim/2].
void rotary_interleaved(backends::Backend& be, TensorRef x, ConstTensorRef positions, ConstTensorRef freqs);

}  // namespace rexnlu::ops
