// Bf16 linear layers for --precision bf16: weights rounded to bf16 once at load (nn.Linear layout
// [out, in]), activations rounded to bf16 per call, products summed in fp32, bias added in fp32.
//   Native: oneDNN's matmul primitive (bf16 x bf16 -> f32) where oneDNN has a bf16 kernel for this
//   CPU (AVX-512 BF16 or AMX; oneDNN 2.6 also emulates it on plain AVX-512). Primitives are cached
//   per (rows, in, out, bias).
//   Elsewhere (AVX2): the same numbers in fp32: both operands rounded to bf16 and widened back
//   exactly, then the fp32 gemm. Correct, but slower than fp32 (the weights are widened per call).
#pragma once

#include <cstddef>
#include <cstdint>

namespace rexnlu::backends::cpu {

// Whether this build has the bf16 path (the oneDNN build).
bool bf16_available();
// Whether oneDNN multiplies bf16 natively on this CPU (else the fp32 emulation runs).
bool bf16_native();
// For describe(): "oneDNN bf16 matmul (avx512_core_amx)" or the emulation's name and its cost.
const char* bf16_kernel_name();

// f32_to_bf16 (tensor/half.h) over n values; bf16_to_f32 widens back exactly.
void to_bf16(const float* src, size_t n, uint16_t* dst);

// y[rows, out] (row stride ldy) = bf16(x) · bf16(W)^T + bias; w [out, in] as to_bf16 left it; bias
// may be null. scratch: linear_bf16_scratch_bytes(rows, in, out).
size_t linear_bf16_scratch_bytes(int rows, int in, int out);
void linear_bf16(const float* x, int rows, int in, const uint16_t* w, const float* bias, int out, float* y, int ldy,
                 void* scratch);

}  // namespace rexnlu::backends::cpu
