#include "backends/cpu/gemm_int8.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

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
#pragma omp parallel for schedule(static) if (rows > 1 && !omp_in_parallel())
  for (int m = 0; m < rows; ++m) {
    const float* row = x + static_cast<size_t>(m) * in;
    float lo = row[0], hi = row[0];
    for (int k = 1; k < in; ++k) {
      lo = std::min(lo, row[k]);
      hi = std::max(hi, row[k]);
    }
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

size_t linear_int8_scratch_bytes(int rows, int in) {
  return align64(static_cast<size_t>(rows) * static_cast<size_t>(in)) + 2 * static_cast<size_t>(rows) * sizeof(float);
}

namespace {

// Columns [n0, n1) of y: the int32 sums land in y's own memory, then are turned into floats in place.
void block(const uint8_t* u, const float* step, const float* offset, int rows, int in, const int8_t* q,
           const float* scale, const float* scaled_sum, const float* bias, int n0, int n1, float* y, int ldy) {
#if defined(REXNLU_BLAS_DNNL)
  const int32_t zero = 0;
  auto* acc = reinterpret_cast<int32_t*>(y + n0);
  if (dnnl_gemm_u8s8s32('N', 'T', 'F', rows, n1 - n0, in, 1.0f, u, in, 0, q + static_cast<size_t>(n0) * in, in, 0,
                        0.0f, acc, ldy, &zero) != dnnl_success)
    throw InternalError("dnnl_gemm_u8s8s32 rejected M=" + std::to_string(rows) + " N=" + std::to_string(n1 - n0) +
                        " K=" + std::to_string(in));
  for (int m = 0; m < rows; ++m) {
    float* yr = y + static_cast<size_t>(m) * ldy;
    const float sm = step[m], om = offset[m];
    for (int n = n0; n < n1; ++n) {
      int32_t a;
      std::memcpy(&a, yr + n, sizeof a);
      yr[n] = sm * scale[n] * static_cast<float>(a) + om * scaled_sum[n] + (bias ? bias[n] : 0.0f);
    }
  }
#else
  (void)u, (void)step, (void)offset, (void)rows, (void)in, (void)q, (void)scale, (void)scaled_sum, (void)bias;
  (void)n0, (void)n1, (void)y, (void)ldy;
  throw InternalError("linear_int8: this build has no oneDNN");
#endif
}

}  // namespace

void linear_int8(const float* x, int rows, int in, const int8_t* q, const float* scale, const float* scaled_sum,
                 const float* bias, int out, float* y, int ldy, void* scratch) {
  if (rows <= 0 || out <= 0) return;
  auto* u = static_cast<uint8_t*>(scratch);
  auto* step = reinterpret_cast<float*>(u + align64(static_cast<size_t>(rows) * static_cast<size_t>(in)));
  float* offset = step + rows;
  quantize_rows_u8(x, rows, in, activation_levels(), u, step, offset);

  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const double ops = 2.0 * rows * out * in;
  if (threads <= 1 || ops < 4.0e6 || out < 64) {
    block(u, step, offset, rows, in, q, scale, scaled_sum, bias, 0, out, y, ldy);
    return;
  }
  // One block of output columns per thread, as backends::cpu::gemm splits the fp32 products.
  const int chunk = ((out + threads - 1) / threads + 15) / 16 * 16;
#pragma omp parallel num_threads(threads)
  {
    const int n0 = omp_get_thread_num() * chunk;
    const int n1 = std::min(out, n0 + chunk);
    if (n0 < n1) block(u, step, offset, rows, in, q, scale, scaled_sum, bias, n0, n1, y, ldy);
  }
}

}  // namespace rexnlu::backends::cpu
