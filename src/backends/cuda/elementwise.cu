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
// x_rows (nullable): row r reads x's row x_rows[r] (the gathered embeddings); keep (nullable): rows
// with keep[r] == 0 are written as zeros (the whole block or warp leaves before any barrier or shuffle).
template <typename TX, typename TY>
__global__ void layer_norm_kernel(const TX* x, const TX* residual, const float* gamma, const float* beta, float eps,
                                  int cols, TY* y, const int32_t* x_rows, const uint8_t* keep) {
  pdl_begin();
  extern __shared__ float row[];
  __shared__ float red[kRowThreads / 32];
  const size_t base = static_cast<size_t>(blockIdx.x) * cols;
  if (keep && keep[blockIdx.x] == 0) {
    for (int c = threadIdx.x; c < cols; c += kRowThreads) y[base + c] = from_f32<TY>(0.0f);
    return;
  }
  const size_t x_base = x_rows ? static_cast<size_t>(x_rows[blockIdx.x]) * cols : base;
  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += kRowThreads) {
    float v = to_f32(x[x_base + c]);
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

// Sum over the warp; every lane gets the result.
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Rows of at most 32 * kPerLane values (the encoder's widths): one warp per row, the row in
// registers (lane l holds columns l, l + 32, ...), statistics by warp shuffles: no shared memory
// and no block barriers. Same two-pass fp32 statistics as layer_norm_kernel. Each value is read
// and written by the same lane, reads before writes: y may alias x or residual.
constexpr int kLnWarps = 4;  // rows per block
template <typename TX, typename TY, int kPerLane>
__global__ void __launch_bounds__(kLnWarps * 32) layer_norm_warp_kernel(const TX* x, const TX* residual,
                                                                        const float* gamma, const float* beta,
                                                                        float eps, int rows, int cols, TY* y,
                                                                        const int32_t* x_rows, const uint8_t* keep) {
  pdl_begin();
  const int r = blockIdx.x * kLnWarps + static_cast<int>(threadIdx.x / 32);
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (r >= rows) return;  // whole warps only: the shuffles below see all 32 lanes
  const size_t base = static_cast<size_t>(r) * cols;
  if (keep && keep[r] == 0) {
    for (int c = lane; c < cols; c += 32) y[base + c] = from_f32<TY>(0.0f);
    return;
  }
  const size_t x_base = x_rows ? static_cast<size_t>(x_rows[r]) * cols : base;
  float v[kPerLane];
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const int c = lane + 32 * k;
    float t = 0.0f;
    if (c < cols) {
      t = to_f32(x[x_base + c]);
      if (residual) t += to_f32(residual[base + c]);
    }
    v[k] = t;
    sum += t;
  }
  const float mean = warp_sum(sum) / static_cast<float>(cols);
  float sq = 0.0f;
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const float d = lane + 32 * k < cols ? v[k] - mean : 0.0f;
    sq += d * d;
  }
  const float inv_std = rsqrtf(warp_sum(sq) / static_cast<float>(cols) + eps);
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const int c = lane + 32 * k;
    if (c < cols) y[base + c] = from_f32<TY>((v[k] - mean) * inv_std * gamma[c] + beta[c]);
  }
}

// 8 consecutive values as fp32, with 16-byte loads and stores (p 16-byte aligned).
template <typename T>
__device__ __forceinline__ void load8(const T* p, float (&v)[8]) {
  constexpr int kPer = 16 / sizeof(T);  // values per 16 bytes: 8 at 16 bits, 4 in fp32
#pragma unroll
  for (int h = 0; h < 8 / kPer; ++h) {
    const uint4 raw = reinterpret_cast<const uint4*>(p)[h];
    const T* t = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int u = 0; u < kPer; ++u) v[h * kPer + u] = to_f32(t[u]);
  }
}
template <typename T>
__device__ __forceinline__ void store8(T* p, const float (&v)[8]) {
  constexpr int kPer = 16 / sizeof(T);
#pragma unroll
  for (int h = 0; h < 8 / kPer; ++h) {
    uint4 raw;
    T* t = reinterpret_cast<T*>(&raw);
#pragma unroll
    for (int u = 0; u < kPer; ++u) t[u] = from_f32<T>(v[h * kPer + u]);
    reinterpret_cast<uint4*>(p)[h] = raw;
  }
}

// The same as layer_norm_warp_kernel for rows of cols = 8 * n values (cols <= 256 * kChunks) with
// every pointer 16-byte aligned: lane l holds the 8-value chunks l, l + 32, ... (16-byte loads and
// stores), and gamma and beta are read with x, before the statistics. (The scalar kernel loads
// them after the statistics, each pair after the previous column's store, which may alias them
// as far as the compiler knows: one memory latency per column step, most of its ~8 us at 128 rows.)
template <typename TX, typename TY, int kChunks>
__global__ void __launch_bounds__(kLnWarps * 32) layer_norm_vec_kernel(const TX* x, const TX* residual,
                                                                       const float* gamma, const float* beta,
                                                                       float eps, int rows, int cols, TY* y,
                                                                       const int32_t* x_rows, const uint8_t* keep) {
  pdl_begin();
  const int r = blockIdx.x * kLnWarps + static_cast<int>(threadIdx.x / 32);
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (r >= rows) return;  // whole warps only
  const size_t base = static_cast<size_t>(r) * cols;
  const int chunks = cols / 8;
  if (keep && keep[r] == 0) {
    const float zeros[8] = {};
    for (int k = lane; k < chunks; k += 32) store8(y + base + 8 * k, zeros);
    return;
  }
  const size_t x_base = x_rows ? static_cast<size_t>(x_rows[r]) * cols : base;
  float v[kChunks][8], g[kChunks][8], bt[kChunks][8];
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < kChunks; ++k) {
    const int c = 8 * (lane + 32 * k);
    if (lane + 32 * k < chunks) {
      load8(x + x_base + c, v[k]);
      if (residual) {
        float t[8];
        load8(residual + base + c, t);
#pragma unroll
        for (int u = 0; u < 8; ++u) v[k][u] += t[u];
      }
      load8(gamma + c, g[k]);
      load8(beta + c, bt[k]);
    } else {
#pragma unroll
      for (int u = 0; u < 8; ++u) v[k][u] = g[k][u] = bt[k][u] = 0.0f;
    }
#pragma unroll
    for (int u = 0; u < 8; ++u) sum += v[k][u];
  }
  const float mean = warp_sum(sum) / static_cast<float>(cols);
  float sq = 0.0f;
#pragma unroll
  for (int k = 0; k < kChunks; ++k)
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const float d = lane + 32 * k < chunks ? v[k][u] - mean : 0.0f;
      sq += d * d;
    }
  const float inv_std = rsqrtf(warp_sum(sq) / static_cast<float>(cols) + eps);
#pragma unroll
  for (int k = 0; k < kChunks; ++k) {
    if (lane + 32 * k < chunks) {
      float o[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) o[u] = (v[k][u] - mean) * inv_std * g[k][u] + bt[k][u];
      store8(y + base + 8 * (lane + 32 * k), o);
    }
  }
}

// One warp per row, in place.
__global__ void masked_softmax_kernel(float* scores, int rows, int cols, int ld, const uint8_t* mask, int ld_mask) {
  pdl_begin();
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
  pdl_begin();
  for (size_t r = blockIdx.y; r < rows; r += gridDim.y) {
    T* row = x + r * ld;
    for (size_t c = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; c < cols;
         c += static_cast<size_t>(gridDim.x) * blockDim.x) {
      row[c] = from_f32<T>(gelu_erf_value(to_f32(row[c])));
    }
  }
}

// The same over 16-byte vectors (8 fp16/bf16 or 4 fp32 values) of a contiguous buffer: the scalar
// kernel's 2-byte accesses reach about a quarter of the H200's bandwidth at 16 bits.
template <typename T>
__global__ void gelu_erf_vec_kernel(uint4* x, size_t vectors) {
  pdl_begin();
  constexpr int kPer = 16 / sizeof(T);
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < vectors;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint4 raw = x[i];
    T* v = reinterpret_cast<T*>(&raw);
#pragma unroll
    for (int u = 0; u < kPer; ++u) v[u] = from_f32<T>(gelu_erf_value(to_f32(v[u])));
    x[i] = raw;
  }
}

__global__ void rotary_kernel(float* x, int rows, int half, int groups, int ld, const int32_t* positions,
                              const float* freqs) {
  pdl_begin();
  const int r = blockIdx.y;
  const int m = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows || m >= half) return;
  // theta in double as on the CPU: angles reach 511 rad, where a float product loses 3e-5.
  const double theta = static_cast<double>(positions[r]) * static_cast<double>(freqs[m]);
  double sd, cd;
  sincos(theta, &sd, &cd);
  const auto c = static_cast<float>(cd), s = static_cast<float>(sd);
  for (int g = 0; g < groups; ++g) {
    float* xg = x + static_cast<size_t>(r) * ld + static_cast<size_t>(g) * 2 * half;
    const float a = xg[2 * m], b = xg[2 * m + 1];
    xg[2 * m] = a * c - b * s;
    xg[2 * m + 1] = b * c + a * s;
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }  // null too

}  // namespace

void layer_norm(DType x_type, DType y_type, const void* x, const void* residual, const float* gamma,
                const float* beta, float eps, int rows, int cols, void* y, cudaStream_t stream,
                const int32_t* x_rows, const uint8_t* keep) {
  if (x_type != y_type && x_type != DType::kF32)
    throw InternalError("cuda::layer_norm: x must be F32 or of y's type");
  if (rows <= 0) return;
  dispatch_float_type(y_type, "cuda::layer_norm", [&](auto tag) {
    using TY = decltype(tag);
    const auto run = [&](auto x_tag) {
      using TX = decltype(x_tag);
      const auto* xs = static_cast<const TX*>(x);
      const auto* rs = static_cast<const TX*>(residual);
      auto* ys = static_cast<TY*>(y);
      const unsigned warp_blocks = static_cast<unsigned>((rows + kLnWarps - 1) / kLnWarps);
      const bool vec = cols % 8 == 0 && aligned16(x) && aligned16(residual) && aligned16(y) && aligned16(gamma) &&
                       aligned16(beta);
      const auto warp_per_row = [&](auto kernel) {
        launch_kernel(kernel, warp_blocks, kLnWarps * 32, 0, stream, "cuda::layer_norm", xs, rs, gamma, beta, eps, rows,
                      cols, ys, x_rows, keep);
      };
      if (vec && cols <= 1024) {  // the row in registers, 16-byte accesses
        const int chunks = cols / 8;
        warp_per_row(chunks <= 32   ? layer_norm_vec_kernel<TX, TY, 1>
                     : chunks <= 64 ? layer_norm_vec_kernel<TX, TY, 2>
                     : chunks <= 96 ? layer_norm_vec_kernel<TX, TY, 3>
                                    : layer_norm_vec_kernel<TX, TY, 4>);
      } else if (cols <= 1024) {  // the row in registers: one warp per row
        warp_per_row(cols <= 256   ? layer_norm_warp_kernel<TX, TY, 8>
                     : cols <= 512 ? layer_norm_warp_kernel<TX, TY, 16>
                                   : layer_norm_warp_kernel<TX, TY, 32>);
      } else {  // wider rows: one block per row, the row in shared memory
        const auto kernel = layer_norm_kernel<TX, TY>;
        const size_t smem = static_cast<size_t>(cols) * sizeof(float);
        if (smem > 48 * 1024)
          check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)),
                "cuda::layer_norm smem");
        launch_kernel(kernel, rows, kRowThreads, smem, stream, "cuda::layer_norm", xs, rs, gamma, beta, eps, cols, ys,
                      x_rows, keep);
      }
    };
    if (x_type == y_type) run(TY{});
    else run(float{});
  });
}

void masked_softmax(float* scores, int rows, int cols, int ld, const uint8_t* mask, int ld_mask,
                    cudaStream_t stream) {
  if (rows <= 0) return;
  constexpr int kWarps = 8;
  launch_kernel(masked_softmax_kernel, (rows + kWarps - 1) / kWarps, kWarps * 32, 0, stream, "cuda::masked_softmax",
                scores, rows, cols, ld, mask, ld_mask);
}

void gelu_erf(DType type, void* x, size_t n, cudaStream_t stream) { gelu_erf_rows(type, x, 1, n, n, stream); }

void gelu_erf_rows(DType type, void* x, size_t rows, size_t cols, size_t ld, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  if (ld == cols) {  // contiguous: one long row
    cols *= rows;
    rows = 1;
    ld = cols;
  }
  const size_t bytes = cols * dtype_size(type);
  if (rows == 1 && bytes % 16 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0) {
    const size_t vectors = bytes / 16, blocks = (vectors + 255) / 256;
    dispatch_float_type(type, "cuda::gelu_erf", [&](auto tag) {
      using T = decltype(tag);
      launch_kernel(gelu_erf_vec_kernel<T>, static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8), 256, 0,
                    stream, "cuda::gelu_erf", static_cast<uint4*>(x), vectors);
    });
    return;
  }
  const size_t col_blocks = (cols + 255) / 256;
  const dim3 grid(static_cast<unsigned>(col_blocks < 65535 * 8 ? col_blocks : 65535 * 8),
                  static_cast<unsigned>(rows < 65535 ? rows : 65535));
  dispatch_float_type(type, "cuda::gelu_erf", [&](auto tag) {
    using T = decltype(tag);
    launch_kernel(gelu_erf_kernel<T>, grid, 256, 0, stream, "cuda::gelu_erf", static_cast<T*>(x), rows, cols, ld);
  });
}

void rotary_interleaved(float* x, int rows, int dim, int groups, int ld, const int32_t* positions,
                        const float* freqs, cudaStream_t stream) {
  if (rows <= 0 || groups <= 0) return;
  const int half = dim / 2;
  launch_kernel(rotary_kernel, dim3((half + 127) / 128, rows), 128, 0, stream, "cuda::rotary_interleaved", x, rows,
                half, groups, ld, positions, freqs);
}

}  // namespace rexnlu::backends::cuda
