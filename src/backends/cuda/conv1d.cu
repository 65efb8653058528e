// The k=3 conv's tap sum with per-sequence zero padding (the taps come from one GEMM), and its
// epilogue: the row mask and the exact GELU.
#include "backends/cuda/ops.h"
#include "backends/cuda/types.cuh"
#include "rexnlu/error.h"

namespace rexnlu::backends::cuda {

namespace {

// Sequence owning `row`: binary search over offsets[0..B].
__device__ int sequence_of(const int32_t* offsets, int num_sequences, int row) {
  int lo = 0, hi = num_sequences - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (offsets[mid] <= row) lo = mid; else hi = mid - 1;
  }
  return lo;
}

template <typename TT, typename T>
__global__ void conv1d_k3_combine_kernel(const TT* taps, const int32_t* offsets, int num_sequences, int out,
                                         const float* bias, T* y, const uint8_t* keep, bool gelu) {
  pdl_begin();
  const int t = blockIdx.x;
  T* yt = y + static_cast<size_t>(t) * out;
  if (keep && keep[t] == 0) {  // a masked row: zeros (GELU(0) = 0, as masking after the GELU)
    for (int o = threadIdx.x; o < out; o += blockDim.x) yt[o] = from_f32<T>(0.0f);
    return;
  }
  __shared__ int first, last;  // the sequence's rows [first, last)
  if (threadIdx.x == 0) {
    const int b = sequence_of(offsets, num_sequences, t);
    first = offsets[b];
    last = offsets[b + 1];
  }
  __syncthreads();
  const size_t ld = 3 * static_cast<size_t>(out);
  const TT* row = taps + t * ld;
  for (int o = threadIdx.x; o < out; o += blockDim.x) {
    // Same order as the CPU: centre tap (+ bias), then the previous token's tap 0, then the next's tap 2.
    float v = (bias ? bias[o] : 0.0f) + to_f32(row[out + o]);
    if (t - 1 >= first) v += to_f32(row[o - static_cast<ptrdiff_t>(ld)]);
    if (t + 1 < last) v += to_f32(row[ld + 2 * out + o]);
    // The GELU reads y as stored (rounded to T), as a separate gelu_erf would: the same bits.
    yt[o] = gelu ? from_f32<T>(gelu_erf_value(to_f32(from_f32<T>(v)))) : from_f32<T>(v);
  }
}

}  // namespace

void conv1d_k3_combine(DType taps_type, DType y_type, const void* taps, const DeviceBatch& batch, int out,
                       const float* bias, void* y, cudaStream_t stream, const uint8_t* keep, bool gelu) {
  if (taps_type != y_type && taps_type != DType::kF32)
    throw InternalError("cuda::conv1d_k3_combine: the taps must be F32 or of y's type");
  if (batch.rows <= 0) return;
  dispatch_float_type(y_type, "cuda::conv1d_k3_combine", [&](auto tag) {
    using T = decltype(tag);
    const auto run = [&](auto taps_tag) {
      using TT = decltype(taps_tag);
      launch_kernel(conv1d_k3_combine_kernel<TT, T>, batch.rows, 256, 0, stream, "cuda::conv1d_k3_combine",
                    static_cast<const TT*>(taps), batch.offsets, batch.num_sequences, out, bias, static_cast<T*>(y), keep,
                    gelu);
    };
    if (taps_type == y_type) run(T{});
    else run(float{});
  });
}

}  // namespace rexnlu::backends::cuda
