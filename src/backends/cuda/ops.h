// The CUDA ops, each with the semantics of its CPU twin in src/kernels/*.h (tested against it
// in tests/cuda). All pointers are device pointers; work is enqueued on `stream`, nothing is
// allocated or synchronized. "type" is the storage type (F32, F16 or BF16) of the activations;
// arithmetic, layer-norm statistics, softmax and link scores are fp32.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/cuda/common.h"

namespace rexnlu::backends::cuda {

// backends::cpu::layer_norm: y[r] = LN(x[r] + residual[r]) * gamma + beta (residual may be null;
// y may alias x or residual when y_type == x_type), rows of `cols` contiguous values, two-pass fp32
// statistics. x and residual are of x_type, y of y_type: the same type, or x F32 and y 16-bit (the
// embeddings' layer norm writing the encoder's first 16-bit activations). Optional, as on the CPU:
// x_rows (row r reads x's row x_rows[r]: the embedding gather; y must not alias x then) and keep
// (rows with keep[r] == 0 are written as zeros).
void layer_norm(DType x_type, DType y_type, const void* x, const void* residual, const float* gamma,
                const float* beta, float eps, int rows, int cols, void* y, cudaStream_t stream,
                const int32_t* x_rows = nullptr, const uint8_t* keep = nullptr);

// backends::cpu::masked_softmax (XSoftmax), in place on fp32 scores.
void masked_softmax(float* scores, int rows, int cols, int ld, const uint8_t* mask, int ld_mask,
                    cudaStream_t stream);

// backends::cpu::gelu_erf, in place on n values.
void gelu_erf(DType type, void* x, size_t n, cudaStream_t stream);
// The same on `rows` rows of `cols` values, `ld` apart (a column block of a wider matrix).
void gelu_erf_rows(DType type, void* x, size_t rows, size_t cols, size_t ld, cudaStream_t stream);

// backends::cpu::rotary_interleaved, in place on fp32 x[rows, groups * dim] (row stride ld), each
// group turned by the same angles (computed once per pair); theta in double as on the CPU.
void rotary_interleaved(float* x, int rows, int dim, int groups, int ld, const int32_t* positions,
                        const float* freqs, cudaStream_t stream);

// backends::cpu::conv1d_k3 over every sequence of a packed batch. The three taps are ONE product
// first: taps = x · packed^T with packed = pack_conv1d_k3_weight(...) as a [3*out, in] weight
// (backends::cuda::Blas::gemm, no bias), giving taps[rows, 3*out] of `taps_type` (y's type, or F32:
// the products of 16-bit x and taps kept in fp32) with column k*out+o holding tap k. This kernel
// adds them up in fp32 with the sequence-local zero padding:
//   y[t,o] = bias[o] + taps[t,out+o] + taps[t-1,o] (t-1 in t's sequence) + taps[t+1,2out+o] (t+1 too)
// bias (fp32) may be null; y is of `y_type`, row stride out. The epilogue, as on the CPU: rows with
// keep[t] == 0 (keep may be null) are written as zeros, the others as the exact GELU of y (of y as
// stored in y_type: the bits of a separate gelu_erf) where gelu is set.
void conv1d_k3_combine(DType taps_type, DType y_type, const void* taps, const DeviceBatch& batch, int out,
                       const float* bias, void* y, cudaStream_t stream, const uint8_t* keep = nullptr,
                       bool gelu = false);

// DeBERTa-v2 disentangled attention (backends::cpu::disentangled_attention) for every sequence
// and head of a packed batch in ONE launch, fused: the c2p and p2c terms are computed inside the
// kernel from the Qr/Kr rows a query tile and key chunk need and gathered there; scores never
// leave shared memory (no L x L or L x 2k tensor in global memory).
// The tensor-core kernel to run where the tensor cores are chosen (AttentionArgs::tc_kernel):
// kFlash = the flash kernel (attention_fa.cu) wherever it applies (16-bit storage computed in
// that type, head_dim 64), else the WMMA kernel: the default (2.6-2.8x faster than the WMMA
// kernel on the H200; docs/parity.md, session 10, on its correctness); kWmma = always the WMMA
// kernel (attention_mma.cu). CudaBackend: REXNLU_CUDA_ATTENTION=fa|wmma.
enum class TensorCoreKernel { kFlash, kWmma };
// The flash kernel's key split (AttentionArgs::fa_split; docs/attention_fa_notes.md): kAuto (the
// default) = where the grid of 64-row blocks has fewer blocks than SMs and the longest sequence
// more than 96 tokens (4 chunks of 32 keys; on the H200 one sequence of 128 to 512 tokens), each
// row block's keys are split over 4 blocks whose partial (max, sum, O) a second kernel merges
// (session 20: 1.02-1.5x faster there than the 16-row shape or 2 parts): NOT the same bits
// as the unsplit kernel (another summation order, within its tolerance of the CPU); it needs
// AttentionArgs::fa_workspace (attention_fa_workspace_bytes). Head_dim 64 only. kOff = never (the
// unsplit kernel's bits at every grid).
// CudaBackend: REXNLU_CUDA_FA_SPLIT=auto|off.
enum class FlashSplit { kAuto, kOff };
struct AttentionArgs {
  DType type = DType::kF32;  // of q, k, v, q_rel, k_rel, out
  // Arithmetic of the products. F32: CUDA cores, any storage type. F16 / BF16: tensor cores
  // (attention_mma.cu: sm_80+ with 150 KB of shared memory per block, i.e. sm_80 and sm_90, not
  // sm_86/89; head_dim 64 or 16, storage F32 or the same type; the inputs are
  // rounded to it when staged and the probabilities once more before P·V; with 16-bit storage
  // computed in that type the flash kernel attention_fa.cu, see tc_kernel): F16 wherever it
  // applies, BF16 where its grid fills the GPU (see attention.cu); else the F32 kernel.
  DType compute = DType::kF32;
  // Where the tensor-core kernel runs (compute F16/BF16 only): -1 (the default) and 1 wherever it
  // is supported, 0 never (CudaBackend: REXNLU_CUDA_MMA_ATTENTION).
  int tensor_cores = -1;
  TensorCoreKernel tc_kernel = TensorCoreKernel::kFlash;
  FlashSplit fa_split = FlashSplit::kAuto;
  // The flash kernel's position terms where a warp's 16 query rows and a 32-key chunk both run
  // contiguously (attention_fa.cu, "Runs"): true (the default) computes them per warp in registers
  // and gathers them by warp shuffles; false always through its shared-memory buffers (as where
  // positions restart or indices clamp). The same bits either way (checked by tests/cuda).
  // CudaBackend: REXNLU_CUDA_FA_SHUFFLE=on|off.
  bool fa_shuffle = true;
  DeviceBatch batch;
  int num_heads = 0;
  int head_dim = 0;  // 16, 32, 64 or 128
  const void* q = nullptr;  // [rows, heads*head_dim], row stride ld_qkv (k and v likewise)
  const void* k = nullptr;
  const void* v = nullptr;
  int ld_qkv = 0;
  const void* q_rel = nullptr;  // Qr [rel_rows, heads*head_dim], row stride ld_rel
  const void* k_rel = nullptr;  // Kr
  int ld_rel = 0;
  int rel_rows = 0;    // 2 * position_buckets; idx(i,j) = clamp(pos_i - pos_j + rel_rows/2, 0, rel_rows-1)
  float scale = 1.0f;  // float32(sqrt(head_dim * 3))
  void* out = nullptr;  // [rows, heads*head_dim], row stride ld_out
  int ld_out = 0;
  // Device scratch of the flash kernel's key split (fa_split; 16-byte aligned, stream
  // ordered: free again once the launch's kernels ran): attention_fa_workspace_bytes(args) bytes.
  void* fa_workspace = nullptr;
  size_t fa_workspace_bytes = 0;
};
// The bytes of fa_workspace disentangled_attention(args) needs (0 unless the arguments are the flash
// kernel's, fa_split is kAuto and the grid splits; queries the current device then). rows_per_block
// and split_parts as disentangled_attention_fa's (attention_fa.h; 0 = by grid size, as the dispatch).
size_t attention_fa_workspace_bytes(const AttentionArgs& args, int rows_per_block = 0, int split_parts = 0);
// q, k, v, q_rel, k_rel and their row strides must be 16-byte aligned (the encoder's fused
// buffers are). Throws rexnlu::Error (kInternal) otherwise, for an unsupported head_dim, or when
// the longest sequence needs more shared memory than the device has: the score rows take
// 8 x L floats, so at head_dim 64 L = 512 needs 60 KB (fits sm_75's 64 KB), larger L needs sm_80+.
void disentangled_attention(const AttentionArgs& args, cudaStream_t stream);
// Whether disentangled_attention(args) runs a tensor-core kernel (attention_fa.cu or
// attention_mma.cu, see tc_kernel) on the current device.
bool attention_uses_tensor_cores(const AttentionArgs& args);

// The link head's scores (as models::RexLinkHead computes them): Z_b = q_b · k_b^T per sequence, fp32, with
// q and k the rotary-applied rows of the packed batch (row stride ld, `dim` columns).
// Every entry with Z > threshold is appended to `links` (at most `capacity`; `count` receives the
// total, which may exceed capacity) in no particular order: fetch_links() copies back and sorts.
// z_out (nullable) receives every Z: sequence b's L*L matrix at z_out + batch.mask_offsets[b].
struct Link {
  int32_t sequence, row, col;
  float logit;
};
struct LinkScoresArgs {
  DeviceBatch batch;
  const float* q = nullptr;
  const float* k = nullptr;
  int ld = 0;
  int dim = 0;
  float threshold = 0.0f;
  Link* links = nullptr;
  int capacity = 0;
  int* count = nullptr;   // device int, zeroed by link_scores before the scores kernel
  float* z_out = nullptr;
  // Output tile per block (link_head.cu): 0 = by the grid (the largest of 64, 32, 16 that still
  // gives every multiprocessor a block), or 16, 32, 64 forced (tests, benchmarks). Z is
  // deterministic for a given tile; tiles sum the dims in different orders (last-bit differences).
  int tile = 0;
};
void link_scores(const LinkScoresArgs& args, cudaStream_t stream);
// Copies the links of the last link_scores(args) back (synchronizes `stream`), sorted by
// sequence, row, col (the order decoding reads them). Throws rexnlu::Error (kInternal) when
// more than args.capacity were found (the caller retries with a larger buffer).
std::vector<Link> fetch_links(const LinkScoresArgs& args, cudaStream_t stream);
// The same without the throw: false (links untouched) when more than args.capacity were found;
// `count` receives the total either way (a rerun with that capacity finds them all). Where
// args.links starts one Link after args.count (one device buffer: the count padded to a Link,
// then the links) and `staging` names page-locked host memory for the count and `staging.links`
// links, the count and that many links come back in one copy and one wait (a second copy only
// when more were found); else the count is copied first, then the links.
struct FetchStaging {
  void* host = nullptr;  // page-locked, at least (1 + links) * sizeof(Link) bytes
  int links = 0;
};
bool try_fetch_links(const LinkScoresArgs& args, cudaStream_t stream, std::vector<Link>& links, int& count,
                     const FetchStaging& staging = {});
// Sorts links by sequence, row, col (every row and col < max_length): a radix sort on the position,
// as std::sort with a comparator took 1.5 ms for 20k links (session 11: L512 b8 at a low threshold).
void sort_links(std::vector<Link>& links, int max_length);

// out[t] = table[ids[t]] for t < rows: fp32 rows of `width` values (ops::embedding).
void embedding(const float* table, const int32_t* ids, int rows, int width, float* out, cudaStream_t stream);

// Rows r of x [rows, width] of `type` (contiguous) with keep[r] == 0 become zeros (ops::zero_rows).
void zero_rows(DType type, void* x, const uint8_t* keep, int rows, int width, cudaStream_t stream);

// The batch's masks as bits into words (mask_bits_words(batch) of them): DeviceBatch::mask_bits's
// layout, from batch.masks, mask_offsets, offsets and mask_span (ops::pack_sequences).
size_t mask_bits_words(const DeviceBatch& batch);
void pack_mask_bits(const DeviceBatch& batch, uint32_t* words, cudaStream_t stream);

// dst[i] = 1 where bit i % 32 of words[i / 32] is set, else 0 (ops::unpack_bits).
void unpack_bits(const uint32_t* words, uint8_t* dst, size_t n, cudaStream_t stream);

// dst[i] = src[i] converted from src_type to dst_type (F32, F16 or BF16; to a narrower type rounded
// to nearest even, 16-bit to F32 exact); the same type is a plain copy on `stream`.
void convert(DType src_type, const void* src, DType dst_type, void* dst, size_t n, cudaStream_t stream);

}  // namespace rexnlu::backends::cuda
