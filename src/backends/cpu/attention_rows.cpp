#include "backends/cpu/attention_rows.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "backends/cpu/vec_math.h"
#include "backends/cpu/x86_intrinsics.h"

namespace rexnlu::backends::cpu {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The scalar versions are also the tails of the vector ones, so they write out every fused
// multiply-add the vector code does (std::fma, fast_exp<true>): a key then gets the same bits in a
// tail as in a vector step, and which keys fall in the tail (it depends on the row's length, i.e.
// on the batch) cannot change an answer. Left to the compiler, `a * b + c` becomes an FMA only from
// -O2 and only where the target has FMA (not without -march=native: REXNLU_NATIVE=OFF), and the
// tails then differed from the vector steps in about 1 key in 8 (session 30).

// Keys [begin, n): the scalar version, and the tail of the vector ones.
float add_relative_terms_scalar(float* s, int begin, int n, const RelativeTerms& t, float mx) {
  for (int j = begin; j < n; ++j) {
    const int r = std::clamp(t.query_pos - t.key_pos[j], 0, t.max_index);
    const float c2p = t.c2p[t.c2p_offset + static_cast<ptrdiff_t>(r) * t.step];
    const float p2c = t.p2c[t.key_offset[j] + static_cast<ptrdiff_t>(r) * t.step];
    const float v = std::fma(c2p + p2c, t.inv_scale, s[j]);
    s[j] = t.mask[j] ? v : kNegInf;
    mx = t.mask[j] ? std::max(mx, v) : mx;
  }
  return mx;
}

float exp_and_sum_scalar(float* s, int begin, int n, float mx) {
  float sum = 0.0f;
  for (int j = begin; j < n; ++j) {
    const float e = s[j] == kNegInf ? 0.0f : fast_exp<true>(s[j] - mx);
    s[j] = e;
    sum += e;
  }
  return sum;
}

#if REXNLU_X86_KERNELS

// ---- AVX-512 (16 keys a step) ----

__attribute__((target("avx512f"))) __m512 exp_avx512(__m512 x) {  // fast_exp<true> (vec_math.h), 16 wide
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), _mm512_set1_ps(0.5f)),
                                        _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
  const __m512 r2 = _mm512_mul_ps(r, r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_add_ps(_mm512_fmadd_ps(p, r2, r), _mm512_set1_ps(1.0f));
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}

__attribute__((target("avx512f"))) float add_relative_terms_avx512(float* s, int n, const RelativeTerms& t, float mx) {
  const __m512i qpos = _mm512_set1_epi32(t.query_pos), zero = _mm512_setzero_si512();
  const __m512i top = _mm512_set1_epi32(t.max_index), step = _mm512_set1_epi32(t.step);
  const __m512i c2p_offset = _mm512_set1_epi32(t.c2p_offset);
  const __m512 inv_scale = _mm512_set1_ps(t.inv_scale), neg_inf = _mm512_set1_ps(kNegInf);
  __m512 vmax = _mm512_set1_ps(mx);
  int j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512i pj = _mm512_loadu_si512(t.key_pos + j);
    const __m512i r = _mm512_min_epi32(_mm512_max_epi32(_mm512_sub_epi32(qpos, pj), zero), top);
    const __m512i rs = _mm512_mullo_epi32(r, step);
    const __m512 c2p = _mm512_i32gather_ps(_mm512_add_epi32(rs, c2p_offset), t.c2p, 4);
    const __m512 p2c = _mm512_i32gather_ps(_mm512_add_epi32(rs, _mm512_loadu_si512(t.key_offset + j)), t.p2c, 4);
    const __m512i m = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.mask + j)));
    const __mmask16 keep = _mm512_test_epi32_mask(m, m);
    const __m512 v = _mm512_mask_blend_ps(
        keep, neg_inf, _mm512_fmadd_ps(_mm512_add_ps(c2p, p2c), inv_scale, _mm512_loadu_ps(s + j)));
    _mm512_storeu_ps(s + j, v);
    vmax = _mm512_max_ps(vmax, v);
  }
  return add_relative_terms_scalar(s, j, n, t, _mm512_reduce_max_ps(vmax));
}

__attribute__((target("avx512f"))) float exp_and_sum_avx512(float* s, int n, float mx) {
  const __m512 vmx = _mm512_set1_ps(mx), neg_inf = _mm512_set1_ps(kNegInf);
  __m512 sum = _mm512_setzero_ps();
  int j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512 x = _mm512_loadu_ps(s + j);
    const __mmask16 kept = _mm512_cmp_ps_mask(x, neg_inf, _CMP_NEQ_UQ);
    const __m512 e = _mm512_maskz_mov_ps(kept, exp_avx512(_mm512_sub_ps(x, vmx)));
    _mm512_storeu_ps(s + j, e);
    sum = _mm512_add_ps(sum, e);
  }
  return _mm512_reduce_add_ps(sum) + exp_and_sum_scalar(s, j, n, mx);
}

// ---- AVX2 (8 keys a step) ----

__attribute__((target("avx2,fma"))) __m256 exp_avx2(__m256 x) {  // fast_exp<true> (vec_math.h), 8 wide
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.0f));
  const __m256 n = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f)));
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), r);
  const __m256 r2 = _mm256_mul_ps(r, r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_add_ps(_mm256_fmadd_ps(p, r2, r), _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

__attribute__((target("avx2,fma"))) float horizontal_max_avx2(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

__attribute__((target("avx2,fma"))) float horizontal_sum_avx2(__m256 v) {
  __m128 m = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_add_ps(m, _mm_movehl_ps(m, m));
  m = _mm_add_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

__attribute__((target("avx2,fma"))) float add_relative_terms_avx2(float* s, int n, const RelativeTerms& t, float mx) {
  const __m256i qpos = _mm256_set1_epi32(t.query_pos), zero = _mm256_setzero_si256();
  const __m256i top = _mm256_set1_epi32(t.max_index), step = _mm256_set1_epi32(t.step);
  const __m256i c2p_offset = _mm256_set1_epi32(t.c2p_offset);
  const __m256 inv_scale = _mm256_set1_ps(t.inv_scale), neg_inf = _mm256_set1_ps(kNegInf);
  __m256 vmax = _mm256_set1_ps(mx);
  int j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256i pj = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.key_pos + j));
    const __m256i r = _mm256_min_epi32(_mm256_max_epi32(_mm256_sub_epi32(qpos, pj), zero), top);
    const __m256i rs = _mm256_mullo_epi32(r, step);
    const __m256 c2p = _mm256_i32gather_ps(t.c2p, _mm256_add_epi32(rs, c2p_offset), 4);
    const __m256 p2c = _mm256_i32gather_ps(
        t.p2c, _mm256_add_epi32(rs, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.key_offset + j))), 4);
    const __m256i m = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(t.mask + j)));
    const __m256 dropped = _mm256_castsi256_ps(_mm256_cmpeq_epi32(m, zero));
    const __m256 v = _mm256_blendv_ps(
        _mm256_fmadd_ps(_mm256_add_ps(c2p, p2c), inv_scale, _mm256_loadu_ps(s + j)), neg_inf, dropped);
    _mm256_storeu_ps(s + j, v);
    vmax = _mm256_max_ps(vmax, v);
  }
  return add_relative_terms_scalar(s, j, n, t, horizontal_max_avx2(vmax));
}

__attribute__((target("avx2,fma"))) float exp_and_sum_avx2(float* s, int n, float mx) {
  const __m256 vmx = _mm256_set1_ps(mx), neg_inf = _mm256_set1_ps(kNegInf);
  __m256 sum = _mm256_setzero_ps();
  int j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 x = _mm256_loadu_ps(s + j);
    const __m256 kept = _mm256_cmp_ps(x, neg_inf, _CMP_NEQ_UQ);
    const __m256 e = _mm256_and_ps(kept, exp_avx2(_mm256_sub_ps(x, vmx)));
    _mm256_storeu_ps(s + j, e);
    sum = _mm256_add_ps(sum, e);
  }
  return horizontal_sum_avx2(sum) + exp_and_sum_scalar(s, j, n, mx);
}

#endif  // REXNLU_X86_KERNELS

}  // namespace

float add_relative_terms(VecIsa isa, float* s, int n, const RelativeTerms& t, float running_max) {
#if REXNLU_X86_KERNELS
  if (isa == VecIsa::kAvx512) return add_relative_terms_avx512(s, n, t, running_max);
  if (isa == VecIsa::kAvx2) return add_relative_terms_avx2(s, n, t, running_max);
#endif
  (void)isa;
  return add_relative_terms_scalar(s, 0, n, t, running_max);
}

float exp_and_sum(VecIsa isa, float* s, int n, float max) {
#if REXNLU_X86_KERNELS
  if (isa == VecIsa::kAvx512) return exp_and_sum_avx512(s, n, max);
  if (isa == VecIsa::kAvx2) return exp_and_sum_avx2(s, n, max);
#endif
  (void)isa;
  return exp_and_sum_scalar(s, 0, n, max);
}

}  // namespace rexnlu::backends::cpu
