// Shared pieces of the CUDA backend: error checks and the element types kernels store.
// Kernels take device pointers, a cudaStream_t and (where they need scratch) caller-owned
// device workspace; they never allocate and never synchronize.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "tensor/dtype.h"

namespace rexnlu::backends::cuda {

// Storage types the kernels accept: kF32, kF16, kBF16 (arithmetic is always fp32).
// Throws rexnlu::Error (kInternal) naming `what` for any other type.
void require_float_type(DType type, const char* what);

// Throws rexnlu::Error (kInternal) "<what>: <CUDA error string>" unless status is cudaSuccess.
void check(cudaError_t status, const char* what);

// After a kernel launch: a launch error (bad configuration, no device) as rexnlu::Error.
void check_launch(const char* kernel);

// Programmatic dependent launch (PDL, sm_90+): whether launch_kernel() (types.cuh) gives our kernels the
// attribute cudaLaunchAttributeProgrammaticStreamSerialization, so that a kernel may be scheduled
// while the previous kernel on its stream is still running (its launch latency hidden behind
// that kernel's tail). Every kernel launched through it waits for its predecessor
// (pdl_wait() in types.cuh) before touching global memory, so results are the same bits either
// way. Off unless set: process-wide, set by CudaBackend (on for sm_90+ unless REXNLU_CUDA_PDL=0, cuda_backend.h),
// by tests directly. A launch reads it when it is made (a captured graph keeps what it recorded).
void set_programmatic_launch(bool on);
bool programmatic_launch();

// What the kernels size their grids and shared memory by, for the current device.
struct DeviceLimits {
  int major = 0;       // compute capability
  int smem_optin = 0;  // shared memory per block with the opt-in (bytes)
  int sms = 0;         // multiprocessors
};
// False (limits untouched) when the current device cannot be queried.
bool query_device_limits(DeviceLimits& limits);
// The same, throwing rexnlu::Error naming `what` instead.
DeviceLimits device_limits(const char* what);

// Token rows of several sequences packed back to back (as models::PackedBatch), on the device.
struct DeviceBatch {
  int num_sequences = 0;
  int max_length = 0;                     // longest sequence (sizes grids and shared memory)
  int rows = 0;                           // total token rows
  const int32_t* offsets = nullptr;       // [B+1]: sequence b owns rows [offsets[b], offsets[b+1])
  const int64_t* mask_offsets = nullptr;  // [B]: sequence b's L*L block starts at masks + mask_offsets[b]
  const int32_t* position_ids = nullptr;  // [rows]
  const uint8_t* masks = nullptr;         // 2D masks, L*L row-major each, nonzero = row attends to column
  // The same masks as bits at the same offsets: bit mask_offsets[b] + k (bit k % 32 of word k / 32)
  // is set where sequence b's byte k is nonzero (the flash kernel reads these: attention_fa.cu;
  // pack_mask_bits makes them from the bytes). mask_span: the bytes from masks to the end of the
  // last mask, so mask_bits holds (mask_span + 31) / 32 words.
  const uint32_t* mask_bits = nullptr;
  int64_t mask_span = 0;
};

}  // namespace rexnlu::backends::cuda
