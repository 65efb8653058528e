#include "ops/tensor_ops.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "ops/check.h"
#if REXNLU_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/ops.h"
#endif

namespace rexnlu::ops {

void embedding(backends::Backend& be, ConstTensorRef table, ConstTensorRef ids, TensorRef out) {
  constexpr const char* op = "embedding";
  const int64_t T = out.rows(), width = table.cols();
  detail::expect_matrix(op, "table", table, DType::kF32, be);
  detail::expect(table.ld() == width, op, "table must be contiguous");
  detail::expect_vector(op, "ids", ids, DType::kI32, T, be);
  detail::expect_vector(op, "out", out, DType::kF32, T * width, be);
  switch (be.device()) {
    case Device::kCpu: {
      const size_t H = static_cast<size_t>(width);
      for (int64_t t = 0; t < T; ++t)
        std::copy_n(table.f32() + static_cast<size_t>(ids.i32()[t]) * H, H, out.f32() + static_cast<size_t>(t) * H);
      return;
    }
#if REXNLU_HAVE_CUDA
    case Device::kCuda:
      backends::cuda::embedding(table.f32(), ids.i32(), detail::to_int(T), detail::to_int(width), out.f32(),
                                backends::cuda::CudaBackend::of(be).stream());
      return;
#endif
    default:
      detail::no_kernel(op, be);
  }
}

void copy(backends::Backend& be, ConstTensorRef src, TensorRef dst) {
  constexpr const char* op = "copy";
  const DType from = detail::activation_dtype(op, "src", src, be), to = detail::activation_dtype(op, "dst", dst, be);
  detail::expect_vector(op, "src", src, from, dst.numel(), be);
  detail::expect_vector(op, "dst", dst, to, dst.numel(), be);
  switch (be.device()) {
    case Device::kCpu:  // F32 only (the CPU's activation type)
      std::copy_n(src.f32(), dst.numel(), dst.f32());
      return;
#if REXNLU_HAVE_CUDA
    case Device::kCuda:
      backends::cuda::convert(from, src.data, to, dst.data, static_cast<size_t>(dst.numel()),
                              backends::cuda::CudaBackend::of(be).stream());
      return;
#endif
    default:
      detail::no_kernel(op, be);
  }
}

void zero_rows(backends::Backend& be, TensorRef x, ConstTensorRef keep) {
  constexpr const char* op = "zero_rows";
  const int64_t rows = x.rows(), width = x.cols();
  const DType type = detail::activation_dtype(op, "x", x, be);
  detail::expect_vector(op, "x", x, type, rows * width, be);
  detail::expect_vector(op, "keep", keep, DType::kU8, rows, be);
  switch (be.device()) {
    case Device::kCpu:
      for (int64_t r = 0; r < rows; ++r)
        if (keep.u8()[r] == 0) std::fill_n(x.f32() + r * width, width, 0.0f);
      return;
#if REXNLU_HAVE_CUDA
    case Device::kCuda:
      backends::cuda::zero_rows(type, x.data, keep.u8(), detail::to_int(rows), detail::to_int(width),
                                backends::cuda::CudaBackend::of(be).stream());
      return;
#endif
    default:
      detail::no_kernel(op, be);
  }
}

namespace {

// Bits of the whole 32-byte groups of src (their count returned), 32 bytes per word.
int64_t pack_bits_words_scalar(const uint8_t* src, int64_t n, uint32_t* words) {
  const int64_t whole = n / 32;
  for (int64_t w = 0; w < whole; ++w) {
    uint32_t bits = 0;
    for (int i = 0; i < 32; ++i) bits |= static_cast<uint32_t>(src[32 * w + i] != 0) << i;
    words[w] = bits;
  }
  return whole;
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) int64_t pack_bits_words_avx2(const uint8_t* src, int64_t n, uint32_t* words) {
  const int64_t whole = n / 32;
  const __m256i zero = _mm256_setzero_si256();
  for (int64_t w = 0; w < whole; ++w) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 32 * w));
    words[w] = ~static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, zero)));
  }
  return whole;
}
#endif

}  // namespace

void pack_bits(const uint8_t* src, int64_t n, uint32_t* words) {
  if (n <= 0) return;
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  const int64_t whole = avx2 ? pack_bits_words_avx2(src, n, words) : pack_bits_words_scalar(src, n, words);
#else
  const int64_t whole = pack_bits_words_scalar(src, n, words);
#endif
  if (const int64_t rest = n - 32 * whole; rest > 0) {
    uint32_t bits = 0;
    for (int64_t i = 0; i < rest; ++i) bits |= static_cast<uint32_t>(src[32 * whole + i] != 0) << i;
    words[whole] = bits;
  }
}

void unpack_bits(backends::Backend& be, ConstTensorRef words, TensorRef dst) {
  constexpr const char* op = "unpack_bits";
  const int64_t n = dst.numel();
  detail::expect_vector(op, "words", words, DType::kI32, (n + 31) / 32, be);
  detail::expect_vector(op, "dst", dst, DType::kU8, n, be);
  switch (be.device()) {
    case Device::kCpu: {
      const auto* w = reinterpret_cast<const uint32_t*>(words.data);
      for (int64_t i = 0; i < n; ++i) dst.u8()[i] = static_cast<uint8_t>((w[i / 32] >> (i % 32)) & 1u);
      return;
    }
#if REXNLU_HAVE_CUDA
    case Device::kCuda:
      backends::cuda::unpack_bits(reinterpret_cast<const uint32_t*>(words.data), dst.u8(), static_cast<size_t>(n),
                                  backends::cuda::CudaBackend::of(be).stream());
      return;
#endif
    default:
      detail::no_kernel(op, be);
  }
}

}  // namespace rexnlu::ops
