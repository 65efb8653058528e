// Device-side helpers shared by the .cu files: fp32 loads/stores of the storage types, dispatch
// from DType to a template parameter, and the one kernel launch (launch_kernel, with programmatic
// dependent launch where it is on).
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

// Exact (erf) GELU of one value, in fp32 (gelu_erf's kernels, the conv's combining epilogue).
__device__ __forceinline__ float gelu_erf_value(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }

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

// ---- programmatic dependent launch (PDL, sm_90+) ---------------------------------------------
// launch_kernel() below gives a kernel the attribute cudaLaunchAttributeProgrammaticStreamSerialization
// where programmatic_launch() (common.h; REXNLU_CUDA_PDL) says so. What this relies on (CUDA
// programming guide 4.5; PTX ISA, griddepcontrol; the comments of cuda_device_runtime_api.h and
// of cudaLaunchAttributeProgrammaticStreamSerialization in the CUDA 13.0 headers):
//  1. A kernel B launched with the attribute right after kernel A on the same stream may be
//     scheduled once every block of A has executed griddepcontrol.launch_dependents
//     (cudaTriggerProgrammaticLaunchCompletion) or exited: possibly while A still runs. A kernel
//     that never triggers (a cuBLASLt GEMM) does so implicitly once all its warps have finished,
//     before the grid completes. Without the attribute, B starts as in plain stream order; a copy
//     or memset before B is ordered as always (programmatic edges join kernels only). In a stream
//     capture (CUDA 12.3+) the same launch records a programmatic edge: replays behave the same.
//  2. cudaGridDependencySynchronize (griddepcontrol.wait) blocks the calling thread until every
//     prerequisite grid (A) has COMPLETED and all its memory operations are performed and visible
//     to B. In a kernel launched without the attribute it returns at once.
//  3. The trigger only lets the dependent be scheduled: it says nothing about A's memory, which B
//     may read only after its own wait. So correctness never depends on where (or whether) a
//     kernel triggers; the trigger only decides how early the next launch may begin.
//  4. B's wait covers A only, not A's predecessors. A kernel C after B may still read what A (or
//     any earlier kernel) wrote because B cannot complete before A: EVERY thread of every kernel
//     launched through launch_kernel() calls pdl_wait() as its first statement, before any early
//     return and before any global memory access (read or write: no write of B races a read of A).
// Hence the rule for every kernel launched through launch_kernel(): pdl_wait() first, then
// pdl_trigger() (the dependents' blocks then sit in their own wait, holding their registers and
// shared memory; they can only be scheduled once every block of this grid is resident and past
// its wait, so they never keep this grid's blocks off the GPU). Nothing is read before the wait,
// not even the weights: the measurable gain is the launch latency, not a preamble.
// Other architectures (the sm_75..sm_89 passes of a multi-architecture build) compile both to nothing.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();
#endif
}
__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaTriggerProgrammaticLaunchCompletion();
#endif
}
// Both, in that order: the first statement of every kernel launched through launch_kernel().
__device__ __forceinline__ void pdl_begin() {
  pdl_wait();
  pdl_trigger();
}

// kernel<<<grid, block, smem_bytes, stream>>>(args...), through cudaLaunchKernelEx with the
// programmatic-serialization attribute where programmatic_launch() (common.h) is on; launch
// errors as rexnlu::Error naming `what`. The kernel must begin with pdl_begin() (see above).
template <typename... Params, typename... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem_bytes, cudaStream_t stream,
                   const char* what, Args&&... args) {
  if (!programmatic_launch()) {
    kernel<<<grid, block, smem_bytes, stream>>>(std::forward<Args>(args)...);
    check_launch(what);
    return;
  }
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem_bytes;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  const cudaError_t launched = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
  const cudaError_t last = cudaGetLastError();  // cleared either way: no stale error for the next check
  check(launched != cudaSuccess ? launched : last, what);
}

// launch_kernel() after raising the kernel's limit of dynamic shared memory to smem_bytes (needed above 48 KB).
template <typename... Params, typename... Args>
void launch_with_smem(void (*kernel)(Params...), dim3 grid, int threads, size_t smem_bytes, cudaStream_t stream,
                      const char* what, Args&&... args) {
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem_bytes)), what);
  launch_kernel(kernel, grid, dim3(threads), smem_bytes, stream, what, std::forward<Args>(args)...);
}

}  // namespace rexnlu::backends::cuda
