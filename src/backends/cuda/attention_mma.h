// The tensor-core variant of cuda::disentangled_attention (attention_mma.cu): WMMA on sm_80+ with
// 150 KB of shared memory per block (sm_80, sm_90; sm_86/89 have 99 KB and get the fp32-core kernel),
// head_dim 64 or 16, arithmetic in args.compute (F16 or BF16), inputs stored in F32 or in that type.
// cuda::disentangled_attention picks it when attention_mma_supported(args); callers need not.
#pragma once

#include <cuda_runtime_api.h>

#include "backends/cuda/ops.h"

namespace rexnlu::backends::cuda {

// The current device and the arguments suit the tensor-core kernel.
bool attention_mma_supported(const AttentionArgs& args);
// Enqueues it (cuda::disentangled_attention checks the arguments first; tests and benchmarks
// call it directly). key_groups: 1 = 64 query rows per block, its 4 warps 16 rows each over all
// keys; 4 = 16 query rows per block, the keys split between its 4 warps (for grids too small to
// fill the GPU otherwise); 0 = by grid size (4 where 64-row blocks would number fewer than half
// the multiprocessors).
void disentangled_attention_mma(const AttentionArgs& args, cudaStream_t stream, int key_groups = 0);

// The tensor-core kernels' block-shape rule (both attention_mma.cu and attention_fa.cu): 64
// query rows per block unless that grid would have fewer blocks than half the multiprocessors
// (`sms`); then 16 rows per block with the keys split between its 4 warps.
bool attention_grid_is_small(const AttentionArgs& args, int sms);

}  // namespace rexnlu::backends::cuda
