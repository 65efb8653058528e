// Elementwise activations.
#pragma once

#include "backends/backend.h"

namespace rexnlu::ops {

// Exact (erf) GELU, torch.nn.functional.gelu's default: 0.5 x (1 + erf(x / sqrt 2)), in place on a
// contiguous F32 tensor or on the rows of an F32 matrix with a row stride (a column block).
void gelu_erf(backends::Backend& be, TensorRef x);

}  // namespace rexnlu::ops
