// Branch-free float approximations of exp and erf that the compiler can vectorise (the libm
// calls cannot be vectorised without -ffast-math). Tested against libm in tests/models.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace rexnlu::backends::cpu {

// a * b + c. Fused: std::fma, one rounding, the bits of the vector kernels' FMA intrinsics whatever
// the compiler and flags. Not fused: as the compiler contracts it (an FMA only from -O2 and only
// where the target has one, e.g. not without -march=native), but vectorisable everywhere.
template <bool kFused>
inline float mul_add(float a, float b, float c) {
  if constexpr (kFused) {
    return std::fma(a, b, c);
  } else {
    return a * b + c;
  }
}

// exp(x), Cephes expf polynomial after x = n ln2 + r; relative error ~2 ulp.
// Inputs below -87.3 return ~0 (denormals are not produced), above 88 are clamped.
// fast_exp<true> has the fused steps of the attention's exp_avx512 / exp_avx2 (attention_rows.cpp).
template <bool kFused = false>
inline float fast_exp(float x) {
  x = std::clamp(x, -87.3f, 88.0f);
  const float n = std::floor(mul_add<kFused>(x, 1.44269504088896341f, 0.5f));
  float r = mul_add<kFused>(-n, 0.693359375f, x);  // ln2 split in two for an exact reduction
  r = mul_add<kFused>(n, 2.12194440e-4f, r);
  const float r2 = r * r;
  float p = 1.9875691500e-4f;
  p = mul_add<kFused>(p, r, 1.3981999507e-3f);
  p = mul_add<kFused>(p, r, 8.3334519073e-3f);
  p = mul_add<kFused>(p, r, 4.1665795894e-2f);
  p = mul_add<kFused>(p, r, 1.6666665459e-1f);
  p = mul_add<kFused>(p, r, 5.0000001201e-1f);
  p = mul_add<kFused>(p, r2, r) + 1.0f;
  const int32_t e = (static_cast<int32_t>(n) + 127) << 23;
  return p * std::bit_cast<float>(e);
}

// erf(x): the rational approximation used by Eigen and XLA, clamped to [-4, 4]
// (erf(+-4) rounds to +-1 in float); max abs error ~3e-7 (5 ulp near 1).
inline float fast_erf(float x) {
  x = std::clamp(x, -4.0f, 4.0f);
  const float x2 = x * x;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 - 2.10102402082508e-06f;
  p = p * x2 - 5.69250639462346e-05f;
  p = p * x2 - 7.34990630326855e-04f;
  p = p * x2 - 2.95459980854025e-03f;
  p = p * x2 - 1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * x2 - 2.13374055278905e-04f;
  q = q * x2 - 1.68282697438203e-03f;
  q = q * x2 - 7.37332916720468e-03f;
  q = q * x2 - 1.42647390514189e-02f;
  return x * p / q;
}

}  // namespace rexnlu::backends::cpu
