// Elementwise activations.
#pragma once

#include <cstddef>

namespace rexnlu::backends::cpu {

// Exact (erf) GELU, torch.nn.functional.gelu default: 0.5 x (1 + erf(x / sqrt 2)). In place.
void gelu_erf(float* x, size_t n);

}  // namespace rexnlu::backends::cpu
