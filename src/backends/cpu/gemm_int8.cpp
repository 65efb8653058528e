#include "backends/cpu/gemm_int8.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "backends/cpu/activations.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/dnnl_matmul.h"
#include "backends/cpu/x86_intrinsics.h"
#include "rexnlu/error.h"

#if defined(REXNLU_BLAS_DNNL)
#include <oneapi/dnnl/dnnl.h>
#endif

namespace rexnlu::backends::cpu {

namespace {

#if defined(REXNLU_BLAS_DNNL)
int effective_isa() { return static_cast<int>(dnnl_get_effective_cpu_isa()); }
// oneDNN's ISA values are bit sets: avx512_core_vnni = 0x67 and everything above it has 0x40.
bool dnnl_has_avx512_vnni() { return (effective_isa() & 0x40) != 0 && (effective_isa() & 0x20) != 0; }
#endif

size_t align64(size_t n) { return (n + 63) / 64 * 64; }

// [lo, hi] of row[0, n), n >= 1. The plain loop stays scalar (float min / max reductions do not
// vectorise without -ffast-math; 1.4% of an int8 forward at L = 128 b1); the same values for
// finite inputs on every path.
void row_range_scalar(const float* row, int begin, int n, float& lo, float& hi) {
  for (int k = begin; k < n; ++k) {
    lo = std::min(lo, row[k]);
    hi = std::max(hi, row[k]);
  }
}

#if REXNLU_X86_KERNELS
__attribute__((target("avx512f"))) void row_range_avx512(const float* row, int n, float& lo, float& hi) {
  __m512 vlo = _mm512_set1_ps(row[0]), vhi = vlo;
  int k = 0;
  for (; k + 16 <= n; k += 16) {
    const __m512 x = _mm512_loadu_ps(row + k);
    vlo = _mm512_min_ps(vlo, x);
    vhi = _mm512_max_ps(vhi, x);
  }
  lo = _mm512_reduce_min_ps(vlo);
  hi = _mm512_reduce_max_ps(vhi);
  row_range_scalar(row, k, n, lo, hi);
}

__attribute__((target("avx2"))) void row_range_avx2(const float* row, int n, float& lo, float& hi) {
  __m256 vlo = _mm256_set1_ps(row[0]), vhi = vlo;
  int k = 0;
  for (; k + 8 <= n; k += 8) {
    const __m256 x = _mm256_loadu_ps(row + k);
    vlo = _mm256_min_ps(vlo, x);
    vhi = _mm256_max_ps(vhi, x);
  }
  alignas(32) float l[8], h[8];
  _mm256_store_ps(l, vlo);
  _mm256_store_ps(h, vhi);
  lo = *std::min_element(l, l + 8);
  hi = *std::max_element(h, h + 8);
  row_range_scalar(row, k, n, lo, hi);
}
#endif

void row_range(VecIsa isa, const float* row, int n, float& lo, float& hi) {
#if REXNLU_X86_KERNELS
  if (isa == VecIsa::kAvx512) return row_range_avx512(row, n, lo, hi);
  if (isa == VecIsa::kAvx2) return row_range_avx2(row, n, lo, hi);
#endif
  (void)isa;
  lo = hi = row[0];
  row_range_scalar(row, 1, n, lo, hi);
}

}  // namespace

bool int8_available() {
#if defined(REXNLU_BLAS_DNNL)
  return true;
#else
  return false;
#endif
}

int activation_levels() {
#if defined(REXNLU_BLAS_DNNL)
  static const int levels = dnnl_has_avx512_vnni() ? 255 : 127;
  return levels;
#else
  return 127;
#endif
}

bool dnnl_has_bf16_instructions() {
#if defined(REXNLU_BLAS_DNNL)
  // avx512_core_bf16 = 0xe7; avx512_core_amx (0x3e7) contains its bits.
  return (effective_isa() & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
#else
  return false;
#endif
}

const char* dnnl_isa_name() {
#if defined(REXNLU_BLAS_DNNL)
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
#else
  return "no oneDNN";
#endif
}

void quantize_weights_s8(const float* w, int out, int in, int8_t* q, float* scale, float* scaled_sum) {
  for (int n = 0; n < out; ++n) {
    const float* row = w + static_cast<size_t>(n) * in;
    float amax = 0.0f;
    for (int k = 0; k < in; ++k) amax = std::max(amax, std::fabs(row[k]));
    const float s = amax > 0.0f ? amax / 127.0f : 1.0f;
    int64_t sum = 0;
    for (int k = 0; k < in; ++k) {
      const int v = static_cast<int>(std::clamp(std::nearbyint(row[k] / s), -127.0f, 127.0f));
      q[static_cast<size_t>(n) * in + k] = static_cast<int8_t>(v);
      sum += v;
    }
    scale[n] = s;
    scaled_sum[n] = s * static_cast<float>(sum);
  }
}

void quantize_rows_u8(const float* x, int rows, int in, int levels, uint8_t* u, float* step, float* offset) {
  const float top = static_cast<float>(levels);
  const VecIsa isa = vec_isa();
#pragma omp parallel for schedule(static) if (rows > 1 && !omp_in_parallel())
  for (int m = 0; m < rows; ++m) {
    const float* row = x + static_cast<size_t>(m) * in;
    float lo = 0.0f, hi = 0.0f;
    row_range(isa, row, in, lo, hi);
    const float s = hi > lo ? (hi - lo) / top : 1.0f;
    const float inv = 1.0f / s;
    uint8_t* out = u + static_cast<size_t>(m) * in;
    for (int k = 0; k < in; ++k) {
      const float v = std::min((row[k] - lo) * inv + 0.5f, top);  // >= 0.5: truncation rounds
      out[k] = static_cast<uint8_t>(static_cast<int>(v));
    }
    step[m] = s;
    offset[m] = lo;
  }
}

size_t linear_int8_scratch_bytes(int rows, int in, int out) {
  const auto r = static_cast<size_t>(rows);
  return align64(r * static_cast<size_t>(in)) + align64(2 * r * sizeof(float)) +
         r * static_cast<size_t>(out) * sizeof(int32_t);
}

std::shared_ptr<const void> prepare_int8_weights(const int8_t* q, int out, int in) {
  return pack_matmul_weights(MatmulKind::kU8S8S32, q, out, in);
}

const char* int8_kernel_name() {
  static const std::string name = [] {
    if (!int8_available()) return std::string("no oneDNN");
    const std::vector<int8_t> zeros(768 * 768);
    const auto packed = pack_matmul_weights(MatmulKind::kU8S8S32, zeros.data(), 768, 768);
    return "oneDNN u8 x s8 matmul (" + std::string(dnnl_isa_name()) + ": " + matmul_impl_name(*packed) + ")";
  }();
  return name.c_str();
}

void linear_int8(const float* x, int rows, int in, const int8_t* q, const void* prepared, const float* scale,
                 const float* scaled_sum, const float* bias, int out, float* y, int ldy, void* scratch,
                 bool gelu) {
  if (rows <= 0 || out <= 0) return;
  auto* u = static_cast<uint8_t*>(scratch);
  auto* step = reinterpret_cast<float*>(u + align64(static_cast<size_t>(rows) * static_cast<size_t>(in)));
  float* offset = step + rows;
  auto* acc = reinterpret_cast<int32_t*>(reinterpret_cast<std::byte*>(step) + align64(2 * static_cast<size_t>(rows) * sizeof(float)));
  quantize_rows_u8(x, rows, in, activation_levels(), u, step, offset);
  matmul(MatmulKind::kU8S8S32, u, rows, in, q, static_cast<const PackedMatmulWeights*>(prepared), nullptr, out, acc,
         out);
  // Dequantize: y[m,n] = step[m] * scale[n] * acc[m,n] + offset[m] * scaled_sum[n] + bias[n].
#pragma omp parallel for schedule(static) if (rows > 1 && !omp_in_parallel())
  for (int m = 0; m < rows; ++m) {
    const int32_t* a = acc + static_cast<size_t>(m) * out;
    float* yr = y + static_cast<size_t>(m) * ldy;
    const float sm = step[m], om = offset[m];
    if (bias)
      for (int n = 0; n < out; ++n) yr[n] = sm * scale[n] * static_cast<float>(a[n]) + om * scaled_sum[n] + bias[n];
    else
      for (int n = 0; n < out; ++n) yr[n] = sm * scale[n] * static_cast<float>(a[n]) + om * scaled_sum[n];
    if (gelu) gelu_erf_rows(yr, 1, out, ldy);
  }
}

}  // namespace rexnlu::backends::cpu
