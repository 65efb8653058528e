// Data movement kernels of the CUDA backend: embedding gather, row masking, storage conversion.
#include <algorithm>

#include "backends/cuda/ops.h"
#include "backends/cuda/types.cuh"

namespace rexnlu::backends::cuda {

namespace {

__global__ void embedding_kernel(const float* table, const int32_t* ids, int width, float* out) {
  pdl_begin();
  const float* src = table + static_cast<size_t>(ids[blockIdx.x]) * width;
  float* dst = out + static_cast<size_t>(blockIdx.x) * width;
  for (int c = threadIdx.x; c < width; c += blockDim.x) dst[c] = src[c];
}

template <typename T>
__global__ void zero_rows_kernel(T* x, const uint8_t* keep, int width) {
  pdl_begin();
  if (keep[blockIdx.x] != 0) return;
  T* row = x + static_cast<size_t>(blockIdx.x) * width;
  for (int c = threadIdx.x; c < width; c += blockDim.x) row[c] = from_f32<T>(0.0f);
}

template <typename S, typename D>
__global__ void convert_kernel(const S* src, D* dst, size_t n) {
  pdl_begin();
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = from_f32<D>(to_f32(src[i]));
}

// One word per thread: its 32 bits as 32 bytes, each 0 or 1 (a nibble spread over 4 bytes by one
// multiply: 0x00204081 places bit k of the nibble at bit 8k, the shifted copies never overlap).
__global__ void unpack_bits_kernel(const uint32_t* words, uint8_t* dst, size_t n) {
  pdl_begin();
  const size_t w = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  const size_t first = 32 * w;
  if (first >= n) return;
  const uint32_t bits = words[w];
  if (first + 32 <= n && reinterpret_cast<uintptr_t>(dst) % 16 == 0) {
    uint32_t q[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) q[k] = (((bits >> (4 * k)) & 0xFu) * 0x00204081u) & 0x01010101u;
    uint4* out = reinterpret_cast<uint4*>(dst + first);
    out[0] = make_uint4(q[0], q[1], q[2], q[3]);
    out[1] = make_uint4(q[4], q[5], q[6], q[7]);
    return;
  }
  for (size_t i = first; i < n && i < first + 32; ++i) dst[i] = static_cast<uint8_t>((bits >> (i - first)) & 1u);
}

}  // namespace

void unpack_bits(const uint32_t* words, uint8_t* dst, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const size_t threads = (n + 31) / 32;
  launch_kernel(unpack_bits_kernel, static_cast<unsigned>((threads + 255) / 256), 256, 0, stream, "cuda::unpack_bits",
                words, dst, n);
}

void embedding(const float* table, const int32_t* ids, int rows, int width, float* out, cudaStream_t stream) {
  if (rows <= 0) return;
  launch_kernel(embedding_kernel, rows, 256, 0, stream, "cuda::embedding", table, ids, width, out);
}

void zero_rows(DType type, void* x, const uint8_t* keep, int rows, int width, cudaStream_t stream) {
  if (rows <= 0) return;
  dispatch_float_type(type, "cuda::zero_rows", [&](auto tag) {
    using T = decltype(tag);
    launch_kernel(zero_rows_kernel<T>, rows, 256, 0, stream, "cuda::zero_rows", static_cast<T*>(x), keep, width);
  });
}

void convert(DType src_type, const void* src, DType dst_type, void* dst, size_t n, cudaStream_t stream) {
  require_float_type(src_type, "cuda::convert (source)");
  require_float_type(dst_type, "cuda::convert (destination)");
  if (n == 0) return;
  if (src_type == dst_type) {
    check(cudaMemcpyAsync(dst, src, n * dtype_size(src_type), cudaMemcpyDeviceToDevice, stream), "cuda::convert");
    return;
  }
  const unsigned blocks = static_cast<unsigned>(std::min<size_t>((n + 255) / 256, 4096));
  dispatch_float_type(src_type, "cuda::convert", [&](auto src_tag) {
    using S = decltype(src_tag);
    dispatch_float_type(dst_type, "cuda::convert", [&](auto dst_tag) {
      using D = decltype(dst_tag);
      launch_kernel(convert_kernel<S, D>, blocks, 256, 0, stream, "cuda::convert", static_cast<const S*>(src),
                    static_cast<D*>(dst), n);
    });
  });
}

}  // namespace rexnlu::backends::cuda
