// Matrix products (row-major). The one place that talks to the BLAS library for fp32.
#pragma once

#include <memory>

namespace rexnlu::backends::cpu {

// C[M,N] = alpha * A[M,K] · op(B) + beta * C.
// trans_b = true:  B is [N,K] (the nn.Linear weight layout), op(B) = B^T.
// trans_b = false: B is [K,N], op(B) = B.
// Large products are split over the worker threads (by columns of C); inside a parallel
// region (e.g. one attention head per thread) the call runs on the calling thread only.
void gemm(bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
          int ldb, float beta, float* C, int ldc);

// fp32 W [out, in] prepared once at load for linear(): W reordered into the blocked layout of
// oneDNN's matmul kernel for this CPU (brgemm on AVX-512), where that kernel has one. The sgemm
// behind gemm() repacks W on every call instead, which costs about 15% of a forward at 128 rows
// (perf at L = 128 batch 1: jit_avx512_core_f32_copy_at_kern). Null where nothing is packed (no
// oneDNN in this build, or oneDNN's kernel here reads the plain layout): linear() then runs gemm().
// The packed copy needs no plain one next to it (CpuBackend keeps only this one; see linear()).
// REXNLU_F32_PACKED=0 in the environment turns the packing off (for before/after benchmarks).
std::shared_ptr<const void> prepare_f32_weights(const float* w, int out, int in);
// Whether prepare_f32_weights packs here, and for describe() the kernel linear() runs on them.
bool f32_weights_packed();
const char* f32_linear_name();

// y[rows,out] = act(x[rows,in] · W^T + bias), W = [out,in] as in nn.Linear; bias may be null;
// act = exact GELU when gelu, else none. y has row stride ldy (>= out) so outputs can be written
// into a wider buffer. The GELU runs on each thread's output block right after its product (the
// primitive's post-op when prepared).
// prepared null: weight is W itself (the split sgemm). prepared = prepare_f32_weights(W'): weight is
// W' itself or null (the packed copy is the only one), and W is rows [first, first + out) of W'.
// The whole W' (first 0, out its rows) runs the primitive on the packed copy; a part of it (an
// out_slice: Qr|Kr of the q|k|v weights, once at load) runs the split sgemm on its rows, unpacked
// from the packed copy for this call when weight is null: the same kernel, so the same bits, as
// with W' kept plain.
void linear(const float* x, int rows, int in, const float* weight, const void* prepared, int first, const float* bias,
            int out, float* y, int ldy, bool gelu = false);

// Which BLAS the build uses and how it threads, for logs and benchmarks.
const char* blas_name();

}  // namespace rexnlu::backends::cpu
