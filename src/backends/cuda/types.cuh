// Device-side helpers shared by the .cu files: fp32 loads/stores of the storage types and
// dispatch from DType to a template parameter.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <utility>

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

// kernel<<<grid, threads, smem_bytes, stream>>>(args...) after raising the kernel's limit of dynamic
// shared memory to smem_bytes (needed above 48 KB); launch errors as rexnlu::Error naming `what`.
template <typename... Params, typename... Args>
void launch_with_smem(void (*kernel)(Params...), dim3 grid, int threads, size_t smem_bytes, cudaStream_t stream,
                      const char* what, Args&&... args) {
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem_bytes)), what);
  kernel<<<grid, threads, smem_bytes, stream>>>(std::forward<Args>(args)...);
  check_launch(what);
}

}  // namespace rexnlu::backends::cuda
