// Device-side helpers shared by the .cu files: fp32 loads/stores of the storage types and
// dispatch from DType to a template parameter.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backends/cuda/common.h"

namespace rexnlu::backends::cuda {

__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T from_f32(float x);
template <> __device__ __forceinline__ float from_f32<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_f32<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// Calls f(T{}) with T the C++ type of `type` (float, __half or __nv_bfloat16).
template <typename F>
void dispatch_float_type(DType type, const char* what, F&& f) {
  require_float_type(type, what);
  switch (type) {
    case DType::kF16: f(__half{}); break;
    case DType::kBF16: f(__nv_bfloat16{}); break;
    default: f(float{}); break;
  }
}

}  // namespace rexnlu::backends::cuda
