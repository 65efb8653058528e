// oneDNN's matmul primitive for the linear layers with weights packed at load (gemm_int8.h,
// gemm_bf16.h, and the fp32 ones of gemm.h):
// y[rows, out] = x[rows, in] · W^T (+ bias) with W in nn.Linear layout [out, in].
//   At load, pack_matmul_weights reorders W once into the layout the primitive prefers for this CPU
//   (format_tag::any: AMX / AVX-512 blocked tiles on the Xeon, plain where oneDNN's kernel is the
//   gemm-based one, e.g. AVX2). At run time one primitive per (kind, rows, in, out, bias) is made
//   and cached (at most kMaxMatmulPrimitives); oneDNN threads it over the calling thread's OpenMP
//   team (runtime ISA dispatch is oneDNN's, so one binary runs everywhere).
//   Where a primitive for some row count would not accept the packed layout (oneDNN would fall back
//   to its reference kernel), that shape runs on the plain weights instead.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace rexnlu::backends::cpu {

enum class MatmulKind {
  kU8S8S32,  // x u8, W s8, y s32 (no bias: gemm_int8.cpp dequantizes and adds it)
  kBF16F32,  // x bf16, W bf16, y f32, bias f32
  kF32,      // x, W, y and bias f32 (gemm.h's linear with prepared weights)
};

// Applied to y by the primitive after the bias (a oneDNN post-op, in the cache-hot output tile).
enum class MatmulPostOp {
  kNone,
  kGeluErf,  // exact GELU, 0.5 y (1 + erf(y / sqrt 2)) (oneDNN's eltwise_gelu_erf)
};

struct PackedMatmulWeights;  // oneDNN memory in the primitive's layout (dnnl_matmul.cpp)

// W [out, in] (int8 or bf16 bits, by kind) reordered for the primitive. Null without oneDNN.
std::shared_ptr<const PackedMatmulWeights> pack_matmul_weights(MatmulKind kind, const void* w, int out, int in);

// y (row stride ldy) = post(x · W^T (+ bias for kBF16F32 and kF32; may be null)). w is the plain
// [out, in] matrix; packed (may be null, e.g. for an out_slice of a Linear) its packed copy, of the
// same out. w may be null where packed is the only copy (fp32): a shape whose primitive would not
// take the packed layout then runs on W unpacked for the call. Throws InternalError naming the
// shape when oneDNN refuses it (dnnl::error: no kernel of that kind on this CPU).
void matmul(MatmulKind kind, const void* x, int rows, int in, const void* w, const PackedMatmulWeights* packed,
            const float* bias, int out, void* y, int ldy, MatmulPostOp post = MatmulPostOp::kNone);

// The primitives kept (one per row count and shape that ran; each holds its own JIT code, ~65 KB
// measured with the demo model): at most kMaxMatmulPrimitives, the least recently used dropped first
// (~130 MB at most). Enough for ~340 row counts of a model's ~6 product shapes; a workload of more
// distinct row counts (a service's packed batches) makes again what it evicted (~0.1-0.3 ms each).
inline constexpr size_t kMaxMatmulPrimitives = 2048;
size_t cached_matmul_primitives();

// W's out (rows of the [out, in] matrix), and W itself in the plain layout again, written to w
// (out * in elements of the kind's weight type; an exact copy of what pack_matmul_weights read).
int packed_out_features(const PackedMatmulWeights& packed);
void unpack_matmul_weights(const PackedMatmulWeights& packed, void* w);

// Whether pack_matmul_weights reordered W (false: oneDNN's kernel here reads the plain layout).
bool is_packed(const PackedMatmulWeights& packed);

// The implementation oneDNN picks for packed weights (e.g. "brg:avx512_core_amx", "gemm:jit"),
// for describe() and benchmarks; "plain" where the packed layout is the plain one.
std::string matmul_impl_name(const PackedMatmulWeights& packed);

}  // namespace rexnlu::backends::cpu
