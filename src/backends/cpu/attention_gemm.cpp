#include "backends/cpu/attention_gemm.h"

#include <algorithm>
#include <cstddef>
#include <string>

#include "backends/cpu/gemm.h"
#include "backends/cpu/x86_intrinsics.h"

namespace rexnlu::backends::cpu {

namespace {

#if REXNLU_X86_KERNELS

// Rows per block for V vectors (16 columns each) per row: R * V accumulators + V loads of B + one
// broadcast of A stay within the 32 zmm registers.
template <int V>
constexpr int kRows = V == 1 ? 12 : V == 2 ? 8 : 6;

// C rows [0, rows) (rows <= kRows<V>), columns [0, 16 * (V - 1) + popcount(last)).
template <int V>
__attribute__((target("avx512f"))) void block_avx512(int rows, int K, float alpha, const float* A, int lda,
                                                     const float* B, int ldb, float* C, int ldc, __mmask16 last) {
  constexpr int R = kRows<V>;
  const float* a[R];
#pragma GCC unroll 12
  // Rows past `rows` repeat the last one: computed, not stored (one kernel for every row count).
  for (int r = 0; r < R; ++r) a[r] = A + static_cast<size_t>(std::min(r, rows - 1)) * lda;
  __m512 acc[R][V];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int k = 0; k < K; ++k) {
    const float* b_row = B + static_cast<size_t>(k) * ldb;
    __m512 b[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v)
      b[v] = v == V - 1 ? _mm512_maskz_loadu_ps(last, b_row + 16 * v) : _mm512_loadu_ps(b_row + 16 * v);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const __m512 x = _mm512_set1_ps(a[r][k]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(x, b[v], acc[r][v]);
    }
  }
  const __m512 s = _mm512_set1_ps(alpha);
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
    if (r >= rows) break;
    float* c = C + static_cast<size_t>(r) * ldc;
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      if (v == V - 1) _mm512_mask_storeu_ps(c + 16 * v, last, _mm512_mul_ps(acc[r][v], s));
      else _mm512_storeu_ps(c + 16 * v, _mm512_mul_ps(acc[r][v], s));
    }
  }
}

template <int V>
void column_block_avx512(int M, int K, float alpha, const float* A, int lda, const float* B, int ldb, float* C,
                         int ldc, __mmask16 last) {
  constexpr int R = kRows<V>;
  for (int i = 0; i < M; i += R)
    block_avx512<V>(std::min(R, M - i), K, alpha, A + static_cast<size_t>(i) * lda, lda, B, ldb,
                    C + static_cast<size_t>(i) * ldc, ldc, last);
}

// Columns in blocks of 64 (B's block stays in L1 over all rows of A), the last one narrower.
void gemm_avx512(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float* C,
                 int ldc) {
  for (int n = 0; n < N; n += 64) {
    const int width = std::min(64, N - n);
    const int vectors = (width + 15) / 16;
    const int tail = width - 16 * (vectors - 1);
    const auto last = static_cast<__mmask16>(tail == 16 ? 0xFFFF : (1u << tail) - 1);
    switch (vectors) {
      case 1: column_block_avx512<1>(M, K, alpha, A, lda, B + n, ldb, C + n, ldc, last); break;
      case 2: column_block_avx512<2>(M, K, alpha, A, lda, B + n, ldb, C + n, ldc, last); break;
      case 3: column_block_avx512<3>(M, K, alpha, A, lda, B + n, ldb, C + n, ldc, last); break;
      default: column_block_avx512<4>(M, K, alpha, A, lda, B + n, ldb, C + n, ldc, last); break;
    }
  }
}

#endif  // REXNLU_X86_KERNELS

}  // namespace

void attention_gemm(VecIsa isa, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                    float* C, int ldc) {
  if (M <= 0 || N <= 0) return;
#if REXNLU_X86_KERNELS
  if (isa == VecIsa::kAvx512) {
    gemm_avx512(M, N, K, alpha, A, lda, B, ldb, C, ldc);
    return;
  }
#endif
  (void)isa;
  gemm(false, M, N, K, alpha, A, lda, B, ldb, 0.0f, C, ldc);
}

const char* attention_kernel_name() {
  static const std::string name = vec_isa() == VecIsa::kAvx512
                                      ? std::string("own AVX-512 kernels")
                                      : std::string(blas_name()) + ", row passes " + vec_isa_name(vec_isa());
  return name.c_str();
}

namespace {

void transpose_scalar(const float* src, int rows, int cols, int ld_src, float* dst, int ld_dst) {
  constexpr int kBlock = 16;  // blocks of 16 x 16: both sides touch whole cache lines
  for (int r0 = 0; r0 < rows; r0 += kBlock)
    for (int c0 = 0; c0 < cols; c0 += kBlock) {
      const int r1 = std::min(rows, r0 + kBlock), c1 = std::min(cols, c0 + kBlock);
      for (int c = c0; c < c1; ++c)
        for (int r = r0; r < r1; ++r)
          dst[static_cast<size_t>(c) * ld_dst + r] = src[static_cast<size_t>(r) * ld_src + c];
    }
}

#if REXNLU_X86_KERNELS
// 16 x 16 blocks transposed in registers (unpack, then 128-bit lane shuffles); the edges scalar.
// (Gathering each column instead measured no faster than the scalar loop on Zen 4.)
__attribute__((target("avx512f"))) void transpose16_avx512(const float* src, int ld_src, float* dst, int ld_dst) {
  __m512 r[16], t[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + static_cast<size_t>(i) * ld_src);
#pragma GCC unroll 8
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
  }
  // r[4b + j] holds, per 128-bit lane l, column 4l' + j of rows 4b..4b+3 (l' the lane): gather lanes.
#pragma GCC unroll 2
  for (int h = 0; h < 16; h += 8)
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      t[h + j] = _mm512_shuffle_f32x4(r[h + j], r[h + 4 + j], 0x88);
      t[h + 4 + j] = _mm512_shuffle_f32x4(r[h + j], r[h + 4 + j], 0xdd);
    }
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
  }
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) _mm512_storeu_ps(dst + static_cast<size_t>(i) * ld_dst, r[i]);
}

void transpose_avx512(const float* src, int rows, int cols, int ld_src, float* dst, int ld_dst) {
  const int rows16 = rows / 16 * 16, cols16 = cols / 16 * 16;
  for (int r0 = 0; r0 < rows16; r0 += 16)
    for (int c0 = 0; c0 < cols16; c0 += 16)
      transpose16_avx512(src + static_cast<size_t>(r0) * ld_src + c0, ld_src, dst + static_cast<size_t>(c0) * ld_dst + r0,
                         ld_dst);
  if (cols16 < cols) transpose_scalar(src + cols16, rows16, cols - cols16, ld_src, dst + static_cast<size_t>(cols16) * ld_dst, ld_dst);
  if (rows16 < rows) transpose_scalar(src + static_cast<size_t>(rows16) * ld_src, rows - rows16, cols, ld_src, dst + rows16, ld_dst);
}
#endif

}  // namespace

void transpose(VecIsa isa, const float* src, int rows, int cols, int ld_src, float* dst, int ld_dst) {
#if REXNLU_X86_KERNELS
  if (isa == VecIsa::kAvx512) {
    transpose_avx512(src, rows, cols, ld_src, dst, ld_dst);
    return;
  }
#endif
  (void)isa;
  transpose_scalar(src, rows, cols, ld_src, dst, ld_dst);
}

}  // namespace rexnlu::backends::cpu
