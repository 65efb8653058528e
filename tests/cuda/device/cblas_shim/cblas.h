// Stand-in for cblas.h in the GPU machine's kernel-test build (tests/cuda/device), which has no
// BLAS: the one call backends::cpu::gemm makes, as a plain loop (double accumulation). Only the
// CPU reference side of the GPU tests runs through it; speed does not matter there.
#pragma once

#include <cstddef>

enum CBLAS_ORDER { CblasRowMajor = 101 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112 };

inline void openblas_set_num_threads(int) {}

inline void cblas_sgemm(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE tb, int M, int N, int K, float alpha,
                        const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double s = 0;
      for (int k = 0; k < K; ++k)
        s += double(A[size_t(m) * lda + k]) * (tb == CblasTrans ? B[size_t(n) * ldb + k] : B[size_t(k) * ldb + n]);
      float& c = C[size_t(m) * ldc + n];
      c = static_cast<float>(alpha * s + (beta == 0.0f ? 0.0 : double(beta) * c));
    }
}
