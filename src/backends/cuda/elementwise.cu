// Row and elementwise ops: layer norm (+ residual), masked softmax, erf GELU, rotary.
#include <cfloat>

#include "backends/cuda/ops.h"
#include "backends/cuda/types.cuh"
#include "rexnlu/error.h"

namespace rexnlu::backends::cuda {

namespace {

constexpr int kRowThreads = 256;

// Sum over the block (kRowThreads threads); every thread gets the result.
__device__ float block_sum(float v, float* red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // red may still be read by a previous call
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float s = 0.0f;
  for (int w = 0; w < kRowThreads / 32; ++w) s += red[w];
  return s;
}

// One block per row; the row (x + residual) is kept in shared memory between the passes.
template <typename TX, typename TY>
__global__ void layer_norm_kernel(const TX* x, const TX* residual, const float* gamma, const float* beta, float eps,
                                  int cols, TY* y) {
  extern __shared__ float row[];
  __shared__ float red[kRowThreads / 32];
  const size_t base = static_cast<size_t>(blockIdx.x) * cols;
  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += kRowThreads) {
    float v = to_f32(x[base + c]);
    if (residual) v += to_f32(residual[base + c]);
    row[c] = v;
    sum += v;
  }
  const float mean = block_sum(sum, red) / static_cast<float>(cols);
  float sq = 0.0f;
  for (int c = threadIdx.x; c < cols; c += kRowThreads) {
    const float d = row[c] - mean;
    sq += d * d;
  }
  const float inv_std = rsqrtf(block_sum(sq, red) / static_cast<float>(cols) + eps);
  for (int c = threadIdx.x; c < cols; c += kRowThreads)
    y[base + c] = from_f32<TY>((row[c] - mean) * inv_std * gamma[c] + beta[c]);
}

// One warp per row, in place.
__global__ void masked_softmax_kernel(float* scores, int rows, int cols, int ld, const uint8_t* mask, int ld_mask) {
  const int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;
  float* s = scores + static_cast<size_t>(r) * ld;
  const uint8_t* m = mask + static_cast<size_t>(r) * ld_mask;
  float mx = -INFINITY;
  for (int c = lane; c < cols; c += 32)
    if (m[c]) mx = fmaxf(mx, s[c]);
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  if (mx == -INFINITY) {  // fully masked row -> zeros, as XSoftmax
    for (int c = lane; c < cols; c += 32) s[c] = 0.0f;
    return;
  }
  float sum = 0.0f;
  for (int c = lane; c < cols; c += 32) {
    const float e = m[c] ? expf(s[c] - mx) : 0.0f;
    s[c] = e;
    sum += e;
  }
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  const float inv = 1.0f / sum;
  for (int c = lane; c < cols; c += 32) s[c] *= inv;
}

// rows x cols values, rows `ld` apart: rows over grid y, columns over grid x, so no value pays
// for a 64-bit division (the earlier flat loop divided every index by cols; the FFN's GELU took
// 36 us at L128 b32 in fp16, docs/benchmarks.md; what this saves is not measured yet).
template <typename T>
__global__ void gelu_erf_kernel(T* x, size_t rows, size_t cols, size_t ld) {
  for (size_t r = blockIdx.y; r < rows; r += gridDim.y) {
    T* row = x + r * ld;
    for (size_t c = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; c < cols;
         c += static_cast<size_t>(gridDim.x) * blockDim.x) {
      const float v = to_f32(row[c]);
      row[c] = from_f32<T>(0.5f * v * (1.0f + erff(v * 0.70710678118654752f)));
    }
  }
}

__global__ void rotary_kernel(float* x, int rows, int half, int ld, const int32_t* positions, const float* freqs) {
  const int r = blockIdx.y;
  const int m = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows || m >= half) return;
  // theta in double as on the CPU: angles reach 511 rad, where a float product loses 3e-5.
  const double theta = static_cast<double>(positions[r]) * static_cast<double>(freqs[m]);
  double sd, cd;
  sincos(theta, &sd, &cd);
  const auto c = static_cast<float>(cd), s = static_cast<float>(sd);
  float* xr = x + static_cast<size_t>(r) * ld;
  const float a = xr[2 * m], b = xr[2 * m + 1];
  xr[2 * m] = a * c - b * s;
  xr[2 * m + 1] = b * c + a * s;
}

}  // namespace

void layer_norm(DType x_type, DType y_type, const void* x, const void* residual, const float* gamma,
                const float* beta, float eps, int rows, int cols, void* y, cudaStream_t stream) {
  if (x_type != y_type && x_type != DType::kF32)
    throw InternalError("cuda::layer_norm: x must be F32 or of y's type");
  if (rows <= 0) return;
  dispatch_float_type(y_type, "cuda::layer_norm", [&](auto tag) {
    using TY = decltype(tag);
    const auto run = [&](auto x_tag) {
      using TX = decltype(x_tag);
      const auto kernel = layer_norm_kernel<TX, TY>;
      const size_t smem = static_cast<size_t>(cols) * sizeof(float);
      if (smem > 48 * 1024)
        check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)),
              "cuda::layer_norm smem");
      kernel<<<rows, kRowThreads, smem, stream>>>(static_cast<const TX*>(x), static_cast<const TX*>(residual), gamma,
                                                  beta, eps, cols, static_cast<TY*>(y));
    };
    if (x_type == y_type) run(TY{});
    else run(float{});
  });
  check_launch("cuda::layer_norm");
}

void masked_softmax(float* scores, int rows, int cols, int ld, const uint8_t* mask, int ld_mask,
                    cudaStream_t stream) {
  if (rows <= 0) return;
  constexpr int kWarps = 8;
  masked_softmax_kernel<<<(rows + kWarps - 1) / kWarps, kWarps * 32, 0, stream>>>(scores, rows, cols, ld, mask, ld_mask);
  check_launch("cuda::masked_softmax");
}

void gelu_erf(DType type, void* x, size_t n, cudaStream_t stream) { gelu_erf_rows(type, x, 1, n, n, stream); }

void gelu_erf_rows(DType type, void* x, size_t rows, size_t cols, size_t ld, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  if (ld == cols) {  // contiguous: one long row
    cols *= rows;
    rows = 1;
    ld = cols;
  }
  const size_t col_blocks = (cols + 255) / 256;
  const dim3 grid(static_cast<unsigned>(col_blocks < 65535 * 8 ? col_blocks : 65535 * 8),
                  static_cast<unsigned>(rows < 65535 ? rows : 65535));
  dispatch_float_type(type, "cuda::gelu_erf", [&](auto tag) {
    using T = decltype(tag);
    gelu_erf_kernel<T><<<grid, 256, 0, stream>>>(static_cast<T*>(x), rows, cols, ld);
  });
  check_launch("cuda::gelu_erf");
}

void rotary_interleaved(float* x, int rows, int dim, int ld, const int32_t* positions, const float* freqs,
                        cudaStream_t stream) {
  if (rows <= 0) return;
  const int half = dim / 2;
  rotary_kernel<<<dim3((half + 127) / 128, rows), 128, 0, stream>>>(x, rows, half, ld, positions, freqs);
  check_launch("cuda::rotary_interleaved");
}

}  // namespace rexnlu::backends::cuda
