#include "backends/cpu/gemm_bf16.h"

#include <omp.h>

#include <string>
#include <vector>

#include "backends/cpu/dnnl_matmul.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/gemm_int8.h"
#include "rexnlu/error.h"
#include "tensor/half.h"

namespace rexnlu::backends::cpu {

namespace {

size_t align64(size_t n) { return (n + 63) / 64 * 64; }

}  // namespace

bool bf16_available() {
#if defined(REXNLU_BLAS_DNNL)
  return true;
#else
  return false;
#endif
}

bool bf16_native() {
  static const bool native = [] {
    if (!bf16_available()) return false;
    try {
      const std::vector<uint16_t> zeros(64 * 64);
      pack_matmul_weights(MatmulKind::kBF16F32, zeros.data(), 64, 64);
      return true;
    } catch (const Error&) {  // InternalError: oneDNN has no bf16 matmul for this CPU
      return false;
    }
  }();
  return native;
}

const char* bf16_kernel_name() {
  static const std::string name = [] {
    if (!bf16_native())
      return "bf16 emulated in fp32 (" + std::string(dnnl_isa_name()) +
             " has no bf16 kernel in oneDNN: weights widened at load, same products as bf16, fp32 speed)";
    const std::vector<uint16_t> zeros(768 * 768);
    const auto packed = pack_matmul_weights(MatmulKind::kBF16F32, zeros.data(), 768, 768);
    return "oneDNN bf16 matmul (" + std::string(dnnl_isa_name()) + ": " + matmul_impl_name(*packed) + ")";
  }();
  return name.c_str();
}

void to_bf16(const float* src, size_t n, uint16_t* dst) {
  const auto count = static_cast<int64_t>(n);
#pragma omp parallel for schedule(static) if (count > 65536 && !omp_in_parallel())
  for (int64_t i = 0; i < count; ++i) dst[i] = f32_to_bf16(src[i]);
}

namespace {

void widen(const uint16_t* src, int64_t n, float* dst) {
#pragma omp parallel for schedule(static) if (n > 65536 && !omp_in_parallel())
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(src[i]);
}

}  // namespace

std::shared_ptr<const void> prepare_bf16_weights(const uint16_t* w, int out, int in) {
  if (bf16_native()) return pack_matmul_weights(MatmulKind::kBF16F32, w, out, in);
  const int64_t n = static_cast<int64_t>(out) * in;
  auto wide = std::make_shared<std::vector<float>>(static_cast<size_t>(n));
  widen(w, n, wide->data());
  return wide;
}

size_t linear_bf16_scratch_bytes(int rows, int in, int out, bool prepared) {
  const auto r = static_cast<size_t>(rows), k = static_cast<size_t>(in), n = static_cast<size_t>(out);
  if (bf16_native()) return align64(r * k * sizeof(uint16_t));
  return align64(r * k * sizeof(float)) + (prepared ? 0 : n * k * sizeof(float));
}

void linear_bf16(const float* x, int rows, int in, const uint16_t* w, const void* prepared, const float* bias, int out,
                 float* y, int ldy, void* scratch) {
  if (rows <= 0 || out <= 0) return;
  const size_t x_count = static_cast<size_t>(rows) * static_cast<size_t>(in);
  if (!bf16_native()) {
    // Both operands rounded to bf16 and widened back exactly: fp32 products of bf16 numbers.
    auto* xf = static_cast<float*>(scratch);
    const auto xn = static_cast<int64_t>(x_count);
#pragma omp parallel for schedule(static) if (xn > 65536 && !omp_in_parallel())
    for (int64_t i = 0; i < xn; ++i) xf[i] = bf16_to_f32(f32_to_bf16(x[i]));
    const float* wf = nullptr;
    if (prepared) {
      wf = static_cast<const std::vector<float>*>(prepared)->data();
    } else {
      float* wide = xf + align64(x_count * sizeof(float)) / sizeof(float);
      widen(w, static_cast<int64_t>(out) * in, wide);
      wf = wide;
    }
    linear(xf, rows, in, wf, nullptr, 0, bias, out, y, ldy);
    return;
  }
  auto* xb = static_cast<uint16_t*>(scratch);
  to_bf16(x, x_count, xb);
  matmul(MatmulKind::kBF16F32, xb, rows, in, w, static_cast<const PackedMatmulWeights*>(prepared), bias, out, y, ldy);
}

}  // namespace rexnlu::backends::cpu
