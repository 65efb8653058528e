// Data movement kernels of the CUDA backend: embedding gather, row masking, storage conversion.
#include <algorithm>

#include "backends/cuda/ops.h"
#include "backends/cuda/types.cuh"

namespace rexnlu::backends::cuda {

namespace {

__global__ void embedding_kernel(const float* table, const int32_t* ids, int width, float* out) {
  const float* src = table + static_cast<size_t>(ids[blockIdx.x]) * width;
  float* dst = out + static_cast<size_t>(blockIdx.x) * width;
  for (int c = threadIdx.x; c < width; c += blockDim.x) dst[c] = src[c];
}

__global__ void zero_rows_kernel(float* x, const uint8_t* keep, int width) {
  if (keep[blockIdx.x] != 0) return;
  float* row = x + static_cast<size_t>(blockIdx.x) * width;
  for (int c = threadIdx.x; c < width; c += blockDim.x) row[c] = 0.0f;
}

template <typename T>
__global__ void convert_kernel(const float* src, T* dst, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = from_f32<T>(src[i]);
}

}  // namespace

void embedding(const float* table, const int32_t* ids, int rows, int width, float* out, cudaStream_t stream) {
  if (rows <= 0) return;
  embedding_kernel<<<rows, 256, 0, stream>>>(table, ids, width, out);
  check_launch("cuda::embedding");
}

void zero_rows(float* x, const uint8_t* keep, int rows, int width, cudaStream_t stream) {
  if (rows <= 0) return;
  zero_rows_kernel<<<rows, 256, 0, stream>>>(x, keep, width);
  check_launch("cuda::zero_rows");
}

void convert_from_f32(const float* src, DType type, void* dst, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_float_type(type, "cuda::convert_from_f32", [&](auto tag) {
    using T = decltype(tag);
    const unsigned blocks = static_cast<unsigned>(std::min<size_t>((n + 255) / 256, 4096));
    convert_kernel<T><<<blocks, 256, 0, stream>>>(src, static_cast<T*>(dst), n);
  });
  check_launch("cuda::convert_from_f32");
}

}  // namespace rexnlu::backends::cuda
