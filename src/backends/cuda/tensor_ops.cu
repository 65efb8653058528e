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

// Thread t of block row b: word mask_offsets[b] / 32 + t of the bits, sequence b's bits of it (a word
// at a mask's edge may hold another sequence's bits too: OR'ed into words zeroed first).
__global__ void pack_mask_bits_kernel(DeviceBatch batch, uint32_t* words) {
  pdl_begin();
  const int b = blockIdx.y;
  const int64_t L = batch.offsets[b + 1] - batch.offsets[b];
  const int64_t lo = batch.mask_offsets[b], hi = lo + L * L;  // the mask's bytes = its bits
  const int64_t w = lo / 32 + blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t first = max(32 * w, lo), last = min(32 * w + 32, hi);
  if (first >= last) return;
  uint32_t bits = 0;
  for (int64_t k = first; k < last; ++k) bits |= (batch.masks[k] != 0 ? 1u : 0u) << (k - 32 * w);
  if (bits != 0) atomicOr(words + w, bits);
}

}  // namespace

size_t mask_bits_words(const DeviceBatch& batch) { return static_cast<size_t>((batch.mask_span + 31) / 32); }

void pack_mask_bits(const DeviceBatch& batch, uint32_t* words, cudaStream_t stream) {
  if (batch.num_sequences <= 0 || batch.mask_span <= 0) return;
  check(cudaMemsetAsync(words, 0, sizeof(uint32_t) * mask_bits_words(batch), stream), "cuda::pack_mask_bits");
  const int64_t per_sequence = (static_cast<int64_t>(batch.max_length) * batch.max_length + 31) / 32 + 1;
  launch_kernel(pack_mask_bits_kernel, dim3(static_cast<unsigned>((per_sequence + 255) / 256), batch.num_sequences),
                dim3(256), 0, stream, "cuda::pack_mask_bits", batch, words);
}

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
