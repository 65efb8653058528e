// The flash-attention variant of cuda::disentangled_attention (attention_fa.cu): raw
// mma.sync m16n8k16 on sm_80+, 16-bit storage computed in that type (type == compute, F16 or
// BF16), head_dim 64 or 16. cuda::disentangled_attention runs it wherever the tensor cores are
// chosen (attention_uses_tensor_cores) and it applies when AttentionArgs::tc_kernel asks for it
// (the default; REXNLU_CUDA_ATTENTION=wmma turns it off: ops.h).
#pragma once

#include <cuda_runtime_api.h>

#include "backends/cuda/ops.h"

namespace rexnlu::backends::cuda {

// The current device and the arguments suit the flash kernel: type == compute (F16 or BF16),
// head_dim 64 (16 is built but not dispatched: see attention_fa.cu), sm_80+ with the shared memory of both block shapes, out 4-byte aligned with
// an even row stride.
bool attention_fa_supported(const AttentionArgs& args);
// Enqueues it (tests and benchmarks call it directly; cuda::disentangled_attention checks the
// arguments first). rows_per_block: 64 = 4 warps of 16 query rows sharing 32-key chunks; 16 = one
// 16-row tile per block, the 4 warps taking 16 keys each of a 64-key chunk, merged at the end
// (for grids too small to fill the GPU otherwise); 0 = by grid size (64 rows wherever the automatic
// split applies to them). split_parts: the blocks each row block's keys are split over, 0 = by
// args.fa_split (kAuto: 4 for 64 rows where their grid has fewer blocks than SMs and the longest
// sequence 4 chunks of 32 keys, else 1; kOff: 1), 1 = no split, 2..8 forced (tests,
// benchmarks; head_dim 64 only); above 1 it needs args.fa_workspace of
// attention_fa_workspace_bytes(args, rows_per_block, split_parts) bytes.
void disentangled_attention_fa(const AttentionArgs& args, cudaStream_t stream, int rows_per_block = 0,
                               int split_parts = 0);

}  // namespace rexnlu::backends::cuda
