// Debugging aid for the CUDA backend, REXNLU_CUDA_VERIFY=1: after every linear layer and every
// fused attention call on the GPU, the op copies its device inputs and output back and recomputes
// a sample of the output on the host from exactly the values the GPU read (the linear layer in
// double; the attention with backends::cpu::disentangled_attention), and prints the worst
// difference of the call to stderr:
//   VERIFY linear #12 M=3840 K=256 N=768 f16: worst 3.1e-06 at (17, 403) got 1.234 want 1.234
//   VERIFY attention #3 B=64 maxL=118 f16 storage, f16 tensor cores: worst 2.2e-03 in sequence 31 (L=97) ...
// with " BAD" appended past the op's tolerance (fp32 accumulation of the same operands: 1e-4 for
// the linear layer; the attention: 1e-4 in fp32, 3e-2 with 16-bit products, whose inputs the
// host does not round; plus, for an output stored in 16 bits, its rounding: 2^-11 in fp16, 2^-8 in
// bf16). Inputs and outputs are read in their storage type (F32 or the 16-bit activations). It
// synchronizes the stream after each op (CUDA graphs are off while it is on) and costs host time:
// for localising a wrong GPU result on real inputs (tests/uie/test_demo_precision.cpp,
// docs/parity.md), never for production.
#pragma once

#if REXNLU_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "backends/cuda/gemm.h"
#include "backends/cuda/ops.h"

namespace rexnlu::ops::cuda_verify {

// Called by the ops where CudaBackend::verifies_ops() (REXNLU_CUDA_VERIFY=1).
// After args's product was enqueued on `stream` (row-major C = A · B^T + bias, trans_b only; then
// the tanh-form GELU where args.gelu_tanh, against which the tolerance allows 1e-3 more).
void linear(const backends::cuda::GemmArgs& args, cudaStream_t stream);
// After args's attention was enqueued on `stream` (any storage type).
void attention(const backends::cuda::AttentionArgs& args, cudaStream_t stream);

}  // namespace rexnlu::ops::cuda_verify
#endif
