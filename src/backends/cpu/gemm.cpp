#include "backends/cpu/gemm.h"

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/cpu/activations.h"
#include "backends/cpu/attention_gemm.h"
#include "backends/cpu/dnnl_matmul.h"
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

namespace {

// Runs block(n0, n1) over the columns [0, N) of an M x N x K product: one block per worker thread,
// rounded to 16 columns so every block keeps full-width vector tiles; small products (and calls
// from inside a parallel region) run as one block on the calling thread.
template <typename Block>
void split_columns(int M, int N, int K, const Block& block) {
  static const SingleThreadedBlas init;
  (void)init;
  if (M <= 0 || N <= 0) return;
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const double flops = 2.0 * M * N * K;
  if (threads <= 1 || flops < 4.0e6 || N < 64) {
    block(0, N);
    return;
  }
  const int chunk = ((N + threads - 1) / threads + 15) / 16 * 16;
#pragma omp parallel num_threads(threads)
  {
    const int n0 = omp_get_thread_num() * chunk;
    const int n1 = std::min(N, n0 + chunk);
    if (n0 < n1) block(n0, n1);
  }
}

}  // namespace

void gemm(bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
          int ldb, float beta, float* C, int ldc) {
  split_columns(M, N, K, [&](int n0, int n1) {
    const float* b_block = trans_b ? B + static_cast<size_t>(n0) * ldb : B + n0;
    gemm_serial(trans_b, M, n1 - n0, K, alpha, A, lda, b_block, ldb, beta, C + n0, ldc);
  });
}

std::shared_ptr<const void> prepare_f32_weights(const float* w, int out, int in) {
#if defined(REXNLU_BLAS_DNNL)
  static const bool off = [] {
    const char* e = std::getenv("REXNLU_F32_PACKED");
    return e != nullptr && std::string(e) == "0";
  }();
  if (off) return nullptr;
  auto packed = pack_matmul_weights(MatmulKind::kF32, w, out, in);
  if (is_packed(*packed)) return packed;
#else
  (void)w, (void)out, (void)in;
#endif
  return nullptr;
}

bool f32_weights_packed() {
  static const bool packed = [] {
    const std::vector<float> zeros(64 * 64);
    return prepare_f32_weights(zeros.data(), 64, 64) != nullptr;
  }();
  return packed;
}

const char* f32_linear_name() {
  static const std::string name = [] {
    const std::vector<float> zeros(768 * 768);
    const auto packed = prepare_f32_weights(zeros.data(), 768, 768);
    if (!packed) return std::string(blas_name());
    return "oneDNN f32 matmul (" + matmul_impl_name(*static_cast<const PackedMatmulWeights*>(packed.get())) +
           "), attention on " + attention_kernel_name();
  }();
  return name.c_str();
}

void linear(const float* x, int rows, int in, const float* weight, const void* prepared, int first, const float* bias,
            int out, float* y, int ldy, bool gelu) {
  // W' unpacked for this call (an out_slice of a packed-only W'). A heap buffer returned at the end
  // of the call, not workspace scratch: the workspace keeps its high-water mark, which would hold a
  // plain copy again.
  std::vector<float> unpacked;
  if (prepared) {
    const auto* packed = static_cast<const PackedMatmulWeights*>(prepared);
    if (first == 0 && out == packed_out_features(*packed)) {
      matmul(MatmulKind::kF32, x, rows, in, weight, packed, bias, out, y, ldy,
             gelu ? MatmulPostOp::kGeluErf : MatmulPostOp::kNone);
      return;
    }
    if (first < 0 || first + out > packed_out_features(*packed))
      throw InternalError("linear: outputs [" + std::to_string(first) + ", " + std::to_string(first + out) +
                          ") of packed weights with " + std::to_string(packed_out_features(*packed)));
    if (weight == nullptr) {
      unpacked.resize(static_cast<size_t>(packed_out_features(*packed)) * in);
      unpack_matmul_weights(*packed, unpacked.data());
      weight = unpacked.data();
    }
    weight += static_cast<size_t>(first) * in;
  } else if (weight == nullptr) {
    throw InternalError("linear: no weights (neither plain nor packed)");
  }
  split_columns(rows, out, in, [&](int n0, int n1) {
    float* y_block = y + n0;
    if (bias)
      for (int r = 0; r < rows; ++r) std::copy(bias + n0, bias + n1, y_block + static_cast<size_t>(r) * ldy);
    gemm_serial(true, rows, n1 - n0, in, 1.0f, x, in, weight + static_cast<size_t>(n0) * in, in, bias ? 1.0f : 0.0f,
                y_block, ldy);
    if (gelu) gelu_erf_rows(y_block, rows, n1 - n0, ldy);
  });
}

}  // namespace rexnlu::backends::cpu
