// Elementwise activations.
#pragma once

#include "backends/backend.h"

namespace rexnlu::ops {

// Exact (erf) GELU, torch.nn.functional.gelu's default: 0.5 x (1 + erf(x / sqrt 2)), in place on a
// contiguous tensor or on the rows of a matrix with a row stride (a column block); F32 or the
// backend's activation type (computed in fp32, stored rounded).
void gelu_erf(backends::Backend& be, TensorRef x);

}  // namespace rexnlu::ops
