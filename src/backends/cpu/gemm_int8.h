// Int8 linear layers for --precision int8: oneDNN's matmul primitive, u8 x s8 -> s32
// (dnnl_matmul.h: weights packed at load into the layout of its AMX / AVX-512 VNNI kernels where the
// CPU has them, oneDNN's gemm-based kernel on AVX2; one primitive per shape, threaded by oneDNN).
//   Weights: symmetric int8 per output channel, quantized once at load: W[n,:] ~ scale[n] * q[n,:].
//   Activations: per row (token), asymmetric u8 at run time: x[m,:] ~ offset[m] + step[m] * u[m,:],
//   u in [0, activation_levels()]. Sums in int32; the epilogue dequantizes and adds the bias:
//     y[m,n] = step[m] * scale[n] * sum_k u[m,k] q[n,k] + offset[m] * scale[n] * sum_k q[n,k] + bias[n].
// activation_levels() is 255 where oneDNN multiplies with VNNI (vpdpbusd: exact int32 sums) and 127
// elsewhere: without VNNI the kernel adds two u8 x s8 products in int16 (vpmaddubsw), which
// saturates above 32767 (255 * 127 * 2 would; 127 * 127 * 2 does not). That saturation is what
// flips ONNX Runtime's INT8 logits on AVX2 (docs/benchmarks.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace rexnlu::backends::cpu {

// Whether this build has the int8 gemm (the oneDNN build), and the activation levels it uses here.
bool int8_available();
int activation_levels();
// The ISA oneDNN runs on, for describe() ("avx2", "avx512_core_vnni", "avx512_core_amx", ...).
const char* dnnl_isa_name();
// Whether that ISA has bf16 dot products (AVX-512 BF16, AMX): where the int8 precision keeps its
// most sensitive layers in bf16 (CpuBackend::make_linear_as); oneDNN's bf16 on plain AVX-512 is
// an emulation at about fp32 speed.
bool dnnl_has_bf16_instructions();
// For describe(): the ISA and the matmul kernel oneDNN picks for a 768 x 768 layer here.
const char* int8_kernel_name();

// q [out, in] int8, scale [out], scaled_sum [out] = scale[n] * sum_k q[n,k], from W [out, in] F32.
void quantize_weights_s8(const float* w, int out, int in, int8_t* q, float* scale, float* scaled_sum);

// q reordered at load for the matmul primitive (dnnl_matmul.h's PackedMatmulWeights); keep q too.
std::shared_ptr<const void> prepare_int8_weights(const int8_t* q, int out, int in);

// Per-row asymmetric u8 quantization of x [rows, in] (contiguous): u [rows, in]; step, offset [rows].
void quantize_rows_u8(const float* x, int rows, int in, int levels, uint8_t* u, float* step, float* offset);

// y[rows, out] (row stride ldy) = act(x · W^T + bias) with W as quantize_weights_s8 left it; act =
// exact GELU when gelu (on each row right after its dequantization, while it is in cache), else
// none; bias may be null; prepared: prepare_int8_weights(q) or null (then q as it is, e.g. an
// out_slice). scratch: linear_int8_scratch_bytes(rows, in, out) (u8 activations, their steps and
// offsets, int32 sums).
size_t linear_int8_scratch_bytes(int rows, int in, int out);
void linear_int8(const float* x, int rows, int in, const int8_t* q, const void* prepared, const float* scale,
                 const float* scaled_sum, const float* bias, int out, float* y, int ldy, void* scratch,
                 bool gelu = false);

}  // namespace rexnlu::backends::cpu
