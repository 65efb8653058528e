// Matrix products (row-major). The one place that talks to the BLAS library.
#pragma once

namespace rexnlu::backends::cpu {

// C[M,N] = alpha * A[M,K] · op(B) + beta * C.
// trans_b = true:  B is [N,K] (the nn.Linear weight layout), op(B) = B^T.
// trans_b = false: B is [K,N], op(B) = B.
// Large products are split over the worker threads (by columns of C); inside a parallel
// region (e.g. one attention head per thread) the call runs on the calling thread only.
void gemm(bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
          int ldb, float beta, float* C, int ldc);

// y[rows,out] = x[rows,in] · W^T + bias, W = [out,in] as in nn.Linear; bias may be null.
// y has row stride ldy (>= out) so outputs can be written into a wider buffer.
void linear(const float* x, int rows, int in, const float* weight, const float* bias, int out,
            float* y, int ldy);

// Which BLAS the build uses and how it threads, for logs and benchmarks.
const char* blas_name();

}  // namespace rexnlu::backends::cpu
