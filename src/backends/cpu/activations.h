// Elementwise activations.
#pragma once

#include <cstddef>

namespace rexnlu::backends::cpu {

// Exact (erf) GELU, torch.nn.functional.gelu default: 0.5 x (1 + erf(x / sqrt 2)). In place,
// split over the worker threads.
void gelu_erf(float* x, size_t n);

// The same on rows [rows, cols] of row stride ld, on the calling thread (an epilogue of a product
// whose output block is still in cache: backends/cpu/gemm.cpp).
void gelu_erf_rows(float* x, int rows, int cols, int ld);

}  // namespace rexnlu::backends::cpu
