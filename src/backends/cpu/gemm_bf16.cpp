#include "backends/cpu/gemm_bf16.h"

#include <omp.h>

#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>

#include "backends/cpu/gemm.h"
#include "backends/cpu/gemm_int8.h"
#include "rexnlu/error.h"
#include "tensor/half.h"

#if defined(REXNLU_BLAS_DNNL)
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace rexnlu::backends::cpu {

namespace {

size_t align64(size_t n) { return (n + 63) / 64 * 64; }

#if defined(REXNLU_BLAS_DNNL)
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

dnnl::engine& cpu_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// y = x W^T + bias for one shape: x [rows, in] bf16, W [out, in] bf16 (oneDNN's {in, out} with
// tag ba), bias {1, out} f32, y [rows, out] f32 with row stride ldy. Throws dnnl::error where
// oneDNN has no bf16 kernel for this CPU.
struct Matmul {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
};

Matmul make_matmul(int rows, int in, int out, int ldy, bool bias) {
  const dnnl::memory::desc src({rows, in}, dt::bf16, tag::ab);
  const dnnl::memory::desc wei({in, out}, dt::bf16, tag::ba);
  const dnnl::memory::desc dst({rows, out}, dt::f32, dnnl::memory::dims{ldy, 1});
  const dnnl::matmul::desc d = bias ? dnnl::matmul::desc(src, wei, dnnl::memory::desc({1, out}, dt::f32, tag::ab), dst)
                                    : dnnl::matmul::desc(src, wei, dst);
  dnnl::matmul::primitive_desc pd(d, cpu_engine());
  return Matmul{pd, dnnl::matmul(pd)};
}

// The primitives made so far, one per shape (the row count changes with batch and length).
const Matmul& cached_matmul(int rows, int in, int out, int ldy, bool bias) {
  static std::mutex mutex;
  static std::map<std::tuple<int, int, int, int, bool>, Matmul> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_tuple(rows, in, out, ldy, bias);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, make_matmul(rows, in, out, ldy, bias)).first;
  return it->second;
}
#endif

}  // namespace

bool bf16_available() {
#if defined(REXNLU_BLAS_DNNL)
  return true;
#else
  return false;
#endif
}

bool bf16_native() {
#if defined(REXNLU_BLAS_DNNL)
  static const bool native = [] {
    try {
      make_matmul(4, 64, 64, 64, true);
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return native;
#else
  return false;
#endif
}

const char* bf16_kernel_name() {
  static const std::string name =
      bf16_native() ? "oneDNN bf16 matmul (" + std::string(dnnl_isa_name()) + ")"
                    : "bf16 emulated in fp32 (" + std::string(dnnl_isa_name()) +
                          " has no bf16 kernel in oneDNN: same numbers, slower than fp32)";
  return name.c_str();
}

void to_bf16(const float* src, size_t n, uint16_t* dst) {
  const auto count = static_cast<int64_t>(n);
#pragma omp parallel for schedule(static) if (count > 65536 && !omp_in_parallel())
  for (int64_t i = 0; i < count; ++i) dst[i] = f32_to_bf16(src[i]);
}

size_t linear_bf16_scratch_bytes(int rows, int in, int out) {
  const auto r = static_cast<size_t>(rows), k = static_cast<size_t>(in), n = static_cast<size_t>(out);
  if (bf16_native()) return align64(r * k * sizeof(uint16_t));
  return align64(r * k * sizeof(float)) + n * k * sizeof(float);
}

void linear_bf16(const float* x, int rows, int in, const uint16_t* w, const float* bias, int out, float* y, int ldy,
                 void* scratch) {
  if (rows <= 0 || out <= 0) return;
  const size_t x_count = static_cast<size_t>(rows) * static_cast<size_t>(in);
  if (!bf16_native()) {
    // Both operands rounded to bf16 and widened back exactly: fp32 products of bf16 numbers.
    auto* xf = static_cast<float*>(scratch);
    float* wf = xf + align64(x_count * sizeof(float)) / sizeof(float);
    const auto xn = static_cast<int64_t>(x_count);
    const auto wn = static_cast<int64_t>(out) * in;
#pragma omp parallel if (!omp_in_parallel())
    {
#pragma omp for schedule(static) nowait
      for (int64_t i = 0; i < xn; ++i) xf[i] = bf16_to_f32(f32_to_bf16(x[i]));
#pragma omp for schedule(static)
      for (int64_t i = 0; i < wn; ++i) wf[i] = bf16_to_f32(w[i]);
    }
    linear(xf, rows, in, wf, bias, out, y, ldy);
    return;
  }
#if defined(REXNLU_BLAS_DNNL)
  auto* xb = static_cast<uint16_t*>(scratch);
  to_bf16(x, x_count, xb);
  try {
    const Matmul& mm = cached_matmul(rows, in, out, ldy, bias != nullptr);
    const auto& pd = mm.pd;
    auto& eng = cpu_engine();
    dnnl::stream stream(eng);
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, dnnl::memory(pd.src_desc(), eng, xb)},
        {DNNL_ARG_WEIGHTS, dnnl::memory(pd.weights_desc(), eng, const_cast<uint16_t*>(w))},
        {DNNL_ARG_DST, dnnl::memory(pd.dst_desc(), eng, y)}};
    if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(pd.bias_desc(), eng, const_cast<float*>(bias)));
    mm.prim.execute(stream, args);
    stream.wait();
  } catch (const dnnl::error& e) {
    throw InternalError("linear_bf16: oneDNN matmul rows=" + std::to_string(rows) + " in=" + std::to_string(in) +
                        " out=" + std::to_string(out) + ": " + e.what());
  }
#endif
}

}  // namespace rexnlu::backends::cpu
