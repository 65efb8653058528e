// Bf16 linear layers for --precision bf16: weights rounded to bf16 once at load (nn.Linear layout
// [out, in]), activations rounded to bf16 per call, products summed in fp32, bias added in fp32.
//   Native: oneDNN's matmul primitive (bf16 x bf16 -> f32, bias f32; dnnl_matmul.h: weights packed
//   at load into its AMX / AVX-512 layout, one primitive per shape) where oneDNN has a bf16 kernel
//   for this CPU (AVX-512 BF16 or AMX; oneDNN 2.6 also emulates it on plain AVX-512).
//   Elsewhere (AVX2): the same numbers in fp32: the weights widened back to fp32 once at load (exact),
//   the activations rounded to bf16 and widened per call, then the fp32 gemm. Same products, summed
//   in a different order than a native kernel; about as fast as fp32 (it is fp32 work).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace rexnlu::backends::cpu {

// Whether this build has the bf16 path (the oneDNN build).
bool bf16_available();
// Whether oneDNN multiplies bf16 natively on this CPU (else the fp32 emulation runs).
bool bf16_native();
// For describe(): "oneDNN bf16 matmul (avx512_core_amx)" or the emulation's name and its cost.
const char* bf16_kernel_name();

// f32_to_bf16 (tensor/half.h) over n values; bf16_to_f32 widens back exactly.
void to_bf16(const float* src, size_t n, uint16_t* dst);

// w [out, in] (bf16) prepared at load: native, reordered for the matmul primitive (dnnl_matmul.h);
// emulated, widened to fp32 [out, in]. Keep w too.
std::shared_ptr<const void> prepare_bf16_weights(const uint16_t* w, int out, int in);

// y[rows, out] (row stride ldy) = bf16(x) · bf16(W)^T + bias; w [out, in] as to_bf16 left it; bias
// may be null; prepared: prepare_bf16_weights(w) or null (then w as it is, e.g. an out_slice: the
// emulation widens it per call). scratch: linear_bf16_scratch_bytes(rows, in, out, prepared).
size_t linear_bf16_scratch_bytes(int rows, int in, int out, bool prepared);
void linear_bf16(const float* x, int rows, int in, const uint16_t* w, const void* prepared, const float* bias, int out,
                 float* y, int ldy, void* scratch);

}  // namespace rexnlu::backends::cpu
