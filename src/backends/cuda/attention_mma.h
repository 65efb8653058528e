// The tensor-core variant of cuda::disentangled_attention (attention_mma.cu): WMMA on sm_80+,
// head_dim 64 or 16, arithmetic in args.compute (F16 or BF16), inputs stored in F32 or in that type.
// cuda::disentangled_attention picks it when attention_mma_supported(args); callers need not.
#pragma once

#include <cuda_runtime_api.h>

#include "backends/cuda/ops.h"

namespace rexnlu::backends::cuda {

// The current device and the arguments suit the tensor-core kernel.
bool attention_mma_supported(const AttentionArgs& args);
// Enqueues it (cuda::disentangled_attention checks the arguments first and calls this only
// where the grid fills the GPU; tests and benchmarks call it directly).
void disentangled_attention_mma(const AttentionArgs& args, cudaStream_t stream);

}  // namespace rexnlu::backends::cuda
