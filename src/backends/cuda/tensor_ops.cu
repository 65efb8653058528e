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

}  // namespace

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
