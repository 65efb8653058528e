// The attention's per-head products, C[M,N] = alpha * A[M,K] · B[K,N] (all row-major): a
// register-blocked AVX-512 kernel that reads A and B in place, no packing (the products are small,
// K = head_dim or L: perf at L = 128 int8 showed about a quarter of oneDNN's sgemm time in its copy
// kernels there); oneDNN's sgemm on other CPUs (vec_isa()).
#pragma once

#include "backends/cpu/cpu_isa.h"

namespace rexnlu::backends::cpu {

void attention_gemm(VecIsa isa, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                    float* C, int ldc);

// Which kernels the attention's products and row passes run on here, for describe().
const char* attention_kernel_name();

// dst[c * ld_dst + r] = src[r * ld_src + c] for r < rows, c < cols.
void transpose(VecIsa isa, const float* src, int rows, int cols, int ld_src, float* dst, int ld_dst);

}  // namespace rexnlu::backends::cpu
