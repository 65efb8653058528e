#include "backends/cpu/gemm.h"

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <string>

#include "rexnlu/error.h"

#if defined(REXNLU_BLAS_DNNL)
#include <oneapi/dnnl/dnnl.h>
#else
#include <cblas.h>
#endif

namespace rexnlu::backends::cpu {

namespace {

// One single-threaded BLAS call on the calling thread.
void gemm_serial(bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                 const float* B, int ldb, float beta, float* C, int ldc) {
#if defined(REXNLU_BLAS_DNNL)
  // Row-major, like the rest of the engine. Fails only on invalid arguments: a bug of ours.
  if (dnnl_sgemm('N', trans_b ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) != dnnl_success)
    throw InternalError("dnnl_sgemm rejected M=" + std::to_string(M) + " N=" + std::to_string(N) +
                        " K=" + std::to_string(K));
#else
  cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha, A,
              lda, B, ldb, beta, C, ldc);
#endif
}

// The BLAS runs single-threaded; we split the work ourselves so that one OpenMP team does
// all the threading (no second pool spinning against it) and so that calls made from inside
// a parallel region (one attention head per thread) stay on their thread.
struct SingleThreadedBlas {
  SingleThreadedBlas() {
#if !defined(REXNLU_BLAS_DNNL)
    openblas_set_num_threads(1);
#endif
  }
};

}  // namespace

const char* blas_name() {
#if defined(REXNLU_BLAS_DNNL)
  return "oneDNN sgemm (1 thread per call, OpenMP split over columns)";
#else
  return "OpenBLAS sgemm (1 thread per call, OpenMP split over columns)";
#endif
}

void gemm(bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
          int ldb, float beta, float* C, int ldc) {
  static const SingleThreadedBlas init;
  (void)init;
  if (M <= 0 || N <= 0) return;
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const double flops = 2.0 * M * N * K;
  if (threads <= 1 || flops < 4.0e6 || N < 64) {
    gemm_serial(trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  // Split the columns of C (= rows of a weight matrix) into one block per thread, rounded to
  // 16 columns so every block keeps full-width vector tiles.
  const int chunk = ((N + threads - 1) / threads + 15) / 16 * 16;
#pragma omp parallel num_threads(threads)
  {
    const int n0 = omp_get_thread_num() * chunk;
    const int n1 = std::min(N, n0 + chunk);
    if (n0 < n1) {
      const float* b_block = trans_b ? B + static_cast<size_t>(n0) * ldb : B + n0;
      gemm_serial(trans_b, M, n1 - n0, K, alpha, A, lda, b_block, ldb, beta, C + n0, ldc);
    }
  }
}

void linear(const float* x, int rows, int in, const float* weight, const float* bias, int out,
            float* y, int ldy) {
  float beta = 0.0f;
  if (bias) {
    for (int r = 0; r < rows; ++r) std::copy(bias, bias + out, y + static_cast<size_t>(r) * ldy);
    beta = 1.0f;
  }
  gemm(true, rows, out, in, 1.0f, x, in, weight, in, beta, y, ldy);
}

}  // namespace rexnlu::backends::cpu
