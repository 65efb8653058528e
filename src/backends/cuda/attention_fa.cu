// Flash-attention style fused disentangled attention on the tensor cores (raw mma.sync
// m16n8k16, sm_80+) for 16-bit storage computed in that type, head_dim 64 or 16. Semantics as
// attention.cu and the CPU kernel:
//   S[i,j] = (Q_i·K_j + Q_i·Kr[idx] + K_j·Qr[idx]) / s,  idx = clamp(pos_i - pos_j + rel_rows/2, 0, rel_rows-1)
//   P = XSoftmax(S, mask);  out_i = sum_j P[i,j] V_j
// One block = one sequence, one head, 4 warps, two shapes (Shape<D, WQ>; at head_dim 64 about
// 93 KB (WQ = 4) and 99 KB (WQ = 1) of shared memory and 236 / 186 registers (the key split
// 242 / 192, nothing spilled; ptxas -v of CUDA 13.0, sm_90, session 28, the masks read as bits):
// 2 blocks per SM):
//   WQ = 4: 64 query rows, warp w owns rows [16w, 16w+16) and all 32 keys of each chunk;
//   WQ = 1: 16 query rows, warp w owns keys [16w, 16w+16) of each 64-key chunk; the four
//           (max, sum, O) of a row are merged at the end (small grids).
// Per chunk: S = Q·K^T in fp32 accumulators (Q's A fragments stay in registers); then for each
// window of relative rows the tile x chunk indexes (one window when positions run contiguously):
// C2P = Q·Kr_win^T (each warp the 16-row window tiles its own rows and keys index) into a per-warp
// fp32 buffer, P2C = K·Qr_win^T (the chunk's 16-key tiles x the window tiles the block's rows
// index; shared by the block when WQ = 4, each warp its own key tile when WQ = 1) into an fp32
// buffer (WQ = 1: the warp's c2p buffer again, once its C2P terms are gathered), and every
// accumulator element gathers c2p[i][idx] + p2c[j][idx] (all of a thread's 2 x 16 loads issued
// first, from an index inside the window, then the adds where the pair indexes it); then the mask
// and an online softmax in registers (row max and sum over the quad of lanes that holds a row), P
// converted to A fragments in registers and O += P·V (ldmatrix.trans of V).
// Runs (WQ = 4, AttentionArgs::fa_shuffle): where a warp's 16 rows run contiguously (pos_i =
// p_q + i) and the chunk's 32 keys too (pos_j = p_k + j), idx = clamp(base + 31 + i - j) with base =
// p_q - p_k + rel_rows/2 - 31, so the warp computes its terms over the 48 relative rows
// clamp([base, base + 48)) in registers instead (the unsplit kernel only where no index clamps:
// kClampRuns): C2P as T = Q·Kr^T (16 x 48), P2C transposed as T2 = Qr·K^T (48 x 32, the K
// fragments of S), and each score's two terms come from a lane of its quad (C2P, same row) and of
// its column group (P2C, same key) by one shuffle each (the lane handing a value out knows which
// of two registers its reader needs): no fp32 buffer, no gather through shared memory, no barrier
// between the warps' P2C and their gathers. Other warps of the block and other chunks (a segment
// start inside, more than one window; in the unsplit kernel clamped indices) take the
// shared-memory path; the same products (the mma's sum for one element does not depend on
// its place in the tile) added in the same order, so the same bits.
// Loads: cp.async 16-byte copies; K, V and key positions are double buffered (the next chunk
// is fetched while this one is computed); the relative rows live in a ring (row r at slot
// r % kRing) that keeps the rows shared by consecutive chunks' windows; the next chunk's first
// window is fetched once every warp is past its last read of the ring in this chunk (a barrier),
// overlapping the softmax and P·V; further windows of a chunk (scattered positions) are fetched
// when needed. Key positions and the mask's bits (two words per row and chunk, DeviceBatch::mask_bits)
// of the next chunks are loaded into registers ahead of use.
// Products accumulate in fp32; P is rounded to the 16-bit type before P·V (as flash attention
// and the WMMA kernel do). Masked entries are excluded by selection (never arithmetic on -inf),
// padded keys read zero-filled K/V rows, and a row with no kept key is all zeros.
// Key split (template kSplit, head_dim 64; AttentionArgs::fa_split kAuto, the default): where the
// 64-row grid is below one block per SM and the longest sequence has 4 chunks (split_parts_by_grid),
// each row block's chunks are dealt to `parts` blocks (grid z = sequences x parts), each running
// the same loop over its chunk range and writing its unnormalised O (fp32), base-2 row max and
// row sum to the caller's workspace (AttentionArgs::fa_workspace) instead of the output; a second
// kernel merges the parts per row (out = sum_p 2^(m_p - M) O_p / sum_p 2^(m_p - M) l_p, zeros
// where no part kept a key) as the 16-row shape merges its warps. Not the same bits as the
// unsplit kernel (P is rounded relative to each part's own running max, and the sums run in
// another order); elsewhere (or kOff) the unsplit kernel runs.
// Every loop whose length depends on the positions runs a fixed, unrolled count with a guard
// inside: ptxas of CUDA 13.0 (sm_90) miscompiled the computed trip count of the strided copy loop
// `for (e = tid; e < n * kPr; e += kThreads)` over a window's relative rows (a max of three
// terms took +rel_rows where -rel_rows was meant), so the copies ran past the window and read
// rows beyond rel_rows: an illegal address in about 1 of 3 evals of the demo model (session 10,
// found with REXNLU_FA_CHECKS and a GPU core dump; compute-sanitizer memcheck never saw it).
#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>

#include "backends/cuda/attention_fa.h"
#include "backends/cuda/attention_mma.h"
#include "backends/cuda/types.cuh"
#include "rexnlu/error.h"

// The sm_75 pass of a multi-architecture build compiles the kernel's body out (it needs sm_80's
// bf16 mma.sync and cp.async): the helpers and constants below are unreferenced there only.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#pragma nv_diag_suppress 177
#endif

namespace rexnlu::backends::cuda {

namespace {

// A build with -DREXNLU_FA_CHECKS traps (printing the block and values) on a copy of a relative
// row outside [0, rel_rows): how the ptxas miscompile described at the top of this file was found.
#ifdef REXNLU_FA_CHECKS
#define FA_CHECK(cond, ...) \
  do {                      \
    if (!(cond)) {          \
      printf(__VA_ARGS__);  \
      __trap();             \
    }                       \
  } while (0)
#else
#define FA_CHECK(cond, ...) \
  do {                      \
  } while (0)
#endif

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr unsigned kFull = 0xffffffffu;

template <int D, int WQ>
struct Shape {
  static constexpr int kWK = kWarps / WQ;          // warps sharing a row tile (key split)
  static constexpr int kKW = WQ == 4 ? 32 : 16;    // keys per warp per chunk
  static constexpr int kBk = kKW * kWK;            // keys per chunk: 32 or 64
  static constexpr int kBq = 16 * WQ;              // query rows per block
  static constexpr int kRw = kBq + kBk;            // relative rows per window (>= kBq + kBk - 1, multiple of 16)
  static constexpr int kRing = kBq + 2 * kBk;      // ring slots: a window and the next (contiguous) one
  static constexpr int kLdh = D + 8;               // 16-bit row pitch (ldmatrix rows on distinct banks)
  static constexpr int kLdf = kRw + 8;             // fp32 pitch of c2p / p2c (= 8 mod 32: float2 stores conflict-free)
  static constexpr int kNt = kKW / 8;              // n8 tiles of S per warp
  static constexpr int kKd = D / 16;               // k16 steps over the head dimension
  static constexpr int kKt = kBk / 16;             // 16-key tiles per chunk
  static constexpr int kPr = D / 8;                // 16-byte pieces per row
  // Shared memory, bytes.
  static constexpr int k = 0;                                  // [2][kBk][kLdh] K chunks
  static constexpr int v = k + 2 * kBk * kLdh * 2;             // [2][kBk][kLdh] V chunks
  static constexpr int kr = v + 2 * kBk * kLdh * 2;            // [kRing][kLdh] Kr ring
  static constexpr int qr = kr + kRing * kLdh * 2;             // [kRing][kLdh] Qr ring
  static constexpr int posk = qr + kRing * kLdh * 2;           // [2][kBk] key positions
  // p2c: [kBk][kLdf] fp32 where WQ = 4; where WQ = 1, warp w's key rows [16w, 16w+16) of it are
  // its own c2p buffer, used for C2P first and then for P2C (gathered one after the other).
  static constexpr int p2c = posk + 2 * kBk * 4;
  static constexpr int c2p = p2c + (kWK == 1 ? kBk * kLdf * 4 : 0);  // [4][16][kLdf] fp32; the Q tile before the loop
  static constexpr int bytes = c2p + kWarps * 16 * kLdf * 4;
  // After the loop (WQ = 1): every warp's O rows and (max, sum) per row.
  static constexpr int kLdo = D + 4;
  static constexpr int merge_ml = kWarps * 16 * kLdo * 4;
  static_assert(merge_ml + kWarps * 16 * 8 <= bytes, "merge area");
  static_assert(kBq * kLdh * 2 <= kWarps * 16 * kLdf * 4, "Q tile area");
  static_assert(v % 16 == 0 && kr % 16 == 0 && qr % 16 == 0 && posk % 16 == 0 && p2c % 16 == 0 && c2p % 16 == 0,
                "16-byte alignment");
  static_assert(kLdf % 32 == 8 || kLdf % 32 == 24, "c2p/p2c pitch");
};

__device__ __forceinline__ uint32_t smem_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// 16 bytes global -> shared, zeros where !full (src must still be a valid address).
__device__ __forceinline__ void cp16(uint32_t dst, const void* src, bool full) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(full ? 16 : 0));
}
__device__ __forceinline__ void cp4(uint32_t dst, const void* src, bool full) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(full ? 4 : 0));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// d += a · b (m16n8k16, fp32 accumulators).
template <typename T>
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, __half>) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// d0, d1 += a · B^T for 16 rows of B (the warp's A fragments a, one per k16 step): one ldmatrix.x4
// per step at addr + 32 bytes x step (its lanes' row addresses as the B operand wants them) gives
// the two n8 tiles, rows 0-7 into d0 and 8-15 into d1. S, C2P's window tiles and the runs' T.
template <typename T, int kKd>
__device__ __forceinline__ void mma_b16(float (&d0)[4], float (&d1)[4], const uint32_t (&a)[kKd][4], uint32_t addr) {
#pragma unroll
  for (int kk = 0; kk < kKd; ++kk) {
    uint32_t bb[4];
    ldsm_x4(bb, addr + kk * 32);
    mma<T>(d0, a[kk], bb[0], bb[1]);
    mma<T>(d1, a[kk], bb[2], bb[3]);
  }
}

// Two floats as a 16-bit pair, the first in the low half (the lower column of a fragment).
template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
}

__device__ __forceinline__ float exp2_approx(float x) {  // 2^x; 2^-inf = +0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ int clamp_rel(int x, int rel_rows) { return min(max(x, 0), rel_rows - 1); }
// A run's relative row run_base + c (attention_fa_kernel, "Runs"): clamped where kClamp, else inside already.
template <bool kClamp>
__device__ __forceinline__ int run_row(int x, int rel_rows) {
  if constexpr (kClamp) return clamp_rel(x, rel_rows);
  return x;
}

// The key split's partial results (kSplit): part p of packed row r, head h has its unnormalised O at
// o + ((p * rows + r) * heads + h) * D and its (base-2 row max, row sum) at ml + 2 * (same index / D).
struct SplitParts {
  float* o = nullptr;
  float* ml = nullptr;
  int parts = 1;
};

// kSplit: this block computes part blockIdx.z % sp.parts of the chunks into sp (merged by
// attention_fa_merge_kernel); else all of them into a.out (sp unused).
template <typename T, int D, int WQ, bool kSplit>
__global__ void __launch_bounds__(kThreads) attention_fa_kernel(AttentionArgs a, SplitParts sp) {
  pdl_begin();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using S = Shape<D, WQ>;
  constexpr int kWK = S::kWK, kKW = S::kKW, kBk = S::kBk, kBq = S::kBq, kRw = S::kRw, kRing = S::kRing;
  constexpr int kLdh = S::kLdh, kLdf = S::kLdf, kNt = S::kNt, kKd = S::kKd, kKt = S::kKt, kPr = S::kPr;
  constexpr int kKu = kBk / 32;  // key positions per lane per chunk
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wq = WQ == 4 ? warp : 0;  // the warp's 16-row tile
  const int kw = WQ == 4 ? 0 : warp;  // the warp's keys within a chunk: [kw * kKW, kw * kKW + kKW)
  const int g = lane >> 2, qd = lane & 3;
  // Runs (see the top of the file): the 64-row shape, 32-key chunks.
  constexpr bool kRuns = WQ == 4;
  static_assert(!kRuns || kKW == 32, "runs: 32 keys per warp and chunk");
  // Runs also where indices clamp: in the split kernel only. The same bits either way, but ptxas
  // (CUDA 13.0, sm_90) allocates the split kernel better with it (20 bytes spilled instead of 142;
  // 4-7 % faster at L128 / L512 b1 on the H200) and the unsplit one worse (20 instead of 0; 5 % slower
  // at L512 b8, 9 % at L512 b1 unsplit): session 22, docs/attention_fa_notes.md. `fast` below spells
  // out both conditions whole (not a shared prefix) because that form keeps each kernel's SASS
  // exactly that of the measured build; equivalent shorter forms did not.
  constexpr bool kClampRuns = kSplit;

  const int b = kSplit ? blockIdx.z / sp.parts : blockIdx.z, h = blockIdx.y, i0 = blockIdx.x * kBq;
  const int row0 = a.batch.offsets[b];
  const int L = a.batch.offsets[b + 1] - row0;
  if (i0 >= L) return;
  const int nq = min(kBq, L - i0);
  // The block's chunks [c0, nc): all of them (nc below), or (kSplit) its part's share [c0, part_nc)
  // (floor-balanced; empty only where the sequence has fewer chunks than parts).
  const int part = kSplit ? blockIdx.z % sp.parts : 0;
  const int c0 = kSplit ? part * ((L + kBk - 1) / kBk) / sp.parts : 0;
  const int part_nc = kSplit ? (part + 1) * ((L + kBk - 1) / kBk) / sp.parts : 0;
  // kSplit: the partial results of the block's row il (< nq) in sp.
  const auto part_at = [&](int il) {
    return (static_cast<size_t>(part) * a.batch.rows + row0 + i0 + il) * a.num_heads + h;
  };
  if constexpr (kSplit) {
    if (c0 >= part_nc) {  // no key here: O = 0, max -inf, sum 0 (weight 0 in the merge)
      for (int e = tid; e < nq * (D / 2); e += kThreads) {
        const int r = e / (D / 2), cc = 2 * (e % (D / 2));
        *reinterpret_cast<float2*>(sp.o + part_at(r) * D + cc) = make_float2(0.0f, 0.0f);
        if (cc == 0) sp.ml[2 * part_at(r)] = -INFINITY, sp.ml[2 * part_at(r) + 1] = 0.0f;
      }
      return;
    }
  }
  const int half = a.rel_rows / 2, R = a.rel_rows;
  const float sl2 = 1.4426950408889634f / a.scale;  // log2(e) / s: the softmax in base 2
  const size_t ld = a.ld_qkv, ldr = a.ld_rel;
  const T* q = static_cast<const T*>(a.q) + static_cast<size_t>(row0) * ld + h * D;
  const T* k = static_cast<const T*>(a.k) + static_cast<size_t>(row0) * ld + h * D;
  const T* v = static_cast<const T*>(a.v) + static_cast<size_t>(row0) * ld + h * D;
  const T* q_rel = static_cast<const T*>(a.q_rel) + h * D;
  const T* k_rel = static_cast<const T*>(a.k_rel) + h * D;
  const int32_t* pos = a.batch.position_ids + row0;
  const uint32_t sbase = smem_addr(smem);
  float* c2p = reinterpret_cast<float*>(smem + S::c2p) + warp * 16 * kLdf;
  float* p2c = reinterpret_cast<float*>(smem + (kWK == 1 ? S::p2c : S::c2p));  // WQ = 1: row 16w + r = warp w's c2p row r
  const int* posk_s = reinterpret_cast<const int*>(smem + S::posk);

  // ---- copies -------------------------------------------------------------------------------
  // K, V rows and positions of chunk c into buffer `buf` (rows past L zero-filled).
  const auto fetch_chunk = [&](int c, int buf) {
    const int j0 = c * kBk;
    for (int e = tid; e < kBk * kPr; e += kThreads) {
      const int r = e / kPr, p = e % kPr;
      const bool ok = j0 + r < L;
      const size_t src = static_cast<size_t>(ok ? j0 + r : 0) * ld + p * 8;
      const uint32_t off = ((buf * kBk + r) * kLdh + p * 8) * 2;
      cp16(sbase + S::k + off, k + src, ok);
      cp16(sbase + S::v + off, v + src, ok);
    }
    if (tid < kBk) cp4(sbase + S::posk + (buf * kBk + tid) * 4, pos + min(j0 + tid, L - 1), j0 + tid < L);
  };
  // The ring holds relative rows [ring_lo, ring_hi] (empty: 0, -1); block-uniform bookkeeping.
  int ring_lo = 0, ring_hi = -1;
  const auto fetch_rel_rows = [&](int lo, int hi) {  // rows [lo, hi] (none if lo > hi; at most kRw)
    const int n = (hi - lo + 1) * kPr;
#pragma unroll
    for (int i = 0; i < (kRw * kPr + kThreads - 1) / kThreads; ++i) {
      const int e = tid + i * kThreads;
      if (e >= n) break;
      const int r = lo + e / kPr, p = e % kPr;
      FA_CHECK(r >= 0 && r < R, "fa: relative row %d of %d, rows [%d, %d] (block %d %d %d)\n", r, R, lo, hi, blockIdx.x, h, b);
      const uint32_t off = ((r % kRing) * kLdh + p * 8) * 2;
      const size_t src = static_cast<size_t>(r) * ldr + p * 8;
      cp16(sbase + S::kr + off, k_rel + src, true);
      cp16(sbase + S::qr + off, q_rel + src, true);
    }
  };
  // Enqueues the rows of [lo, hi] (a span <= kRw) the ring lacks. Rows of [lo, hi] get distinct
  // slots; rows outside it may be overwritten (the caller makes sure none of those is in use).
  const auto fetch_window = [&](int lo, int hi) {
    fetch_rel_rows(lo, min(hi, ring_lo - 1));
    fetch_rel_rows(max(lo, ring_hi + 1), hi);
    const bool joins = ring_lo <= ring_hi && hi >= ring_lo - 1 && lo <= ring_hi + 1 &&
                       max(hi, ring_hi) - min(lo, ring_lo) + 1 <= kRing;
    if (joins) ring_lo = min(lo, ring_lo), ring_hi = max(hi, ring_hi);
    else ring_lo = lo, ring_hi = hi;
  };

  // ---- prologue -----------------------------------------------------------------------------
  // Q tile (zero rows past nq) into the c2p area (loaded into fragments before the first c2p) and
  // chunk 0, enqueued before the positions are read (the first window needs them).
  for (int e = tid; e < kBq * kPr; e += kThreads) {
    const int r = e / kPr, p = e % kPr;
    cp16(sbase + S::c2p + (r * kLdh + p * 8) * 2, q + static_cast<size_t>(min(i0 + r, L - 1)) * ld + p * 8, r < nq);
  }
  fetch_chunk(c0, 0);
  // Query positions: the block's range, the warp's range, the thread's two rows.
  int qmn = INT_MAX, qmx = INT_MIN, wqmn = INT_MAX, wqmx = INT_MIN;
#pragma unroll
  for (int u = 0; u < (kBq + 31) / 32; ++u) {
    const int r = lane + 32 * u;
    if (r >= nq) break;
    const int p = pos[i0 + r];
    qmn = min(qmn, p), qmx = max(qmx, p);
    if (r >= 16 * wq && r < 16 * wq + 16) wqmn = min(wqmn, p), wqmx = max(wqmx, p);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    qmn = min(qmn, __shfl_xor_sync(kFull, qmn, o)), qmx = max(qmx, __shfl_xor_sync(kFull, qmx, o));
    wqmn = min(wqmn, __shfl_xor_sync(kFull, wqmn, o)), wqmx = max(wqmx, __shfl_xor_sync(kFull, wqmx, o));
  }
  const bool warp_rows = wqmn <= wqmx;  // the warp has a valid row
  int pq[2];
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) pq[rr] = pos[i0 + min(16 * wq + g + 8 * rr, nq - 1)];
  // Runs: whether the warp's valid rows run contiguously from wq_first (its first row's position).
  int wq_first = 0;
  bool wrun = false;
  if (kRuns && warp_rows) {
    const int il = 16 * wq + (lane & 15), p = pos[i0 + min(il, nq - 1)];
    wq_first = __shfl_sync(kFull, p, 0);
    wrun = __all_sync(kFull, il >= nq || p - (lane & 15) == wq_first) != 0;
  }

  // Key positions: raw values of a chunk per lane (keys c*kBk + 32u + lane), then the range of
  // each 16-key tile (INT_MAX / INT_MIN when it holds no key).
  const auto load_pos = [&](int c, int (&raw)[kKu]) {
#pragma unroll
    for (int u = 0; u < kKu; ++u) raw[u] = pos[min(c * kBk + 32 * u + lane, L - 1)];
  };
  const auto tile_ranges = [&](int c, const int (&raw)[kKu], int (&tmn)[kKt], int (&tmx)[kKt]) {
#pragma unroll
    for (int u = 0; u < kKu; ++u) {
      const bool ok = c * kBk + 32 * u + lane < L;
      int mn = ok ? raw[u] : INT_MAX, mx = ok ? raw[u] : INT_MIN;
#pragma unroll
      for (int o = 8; o > 0; o >>= 1)
        mn = min(mn, __shfl_xor_sync(kFull, mn, o)), mx = max(mx, __shfl_xor_sync(kFull, mx, o));
      tmn[2 * u] = __shfl_sync(kFull, mn, 0), tmn[2 * u + 1] = __shfl_sync(kFull, mn, 16);
      tmx[2 * u] = __shfl_sync(kFull, mx, 0), tmx[2 * u + 1] = __shfl_sync(kFull, mx, 16);
    }
  };
  // Runs: whether chunk c's keys run contiguously (keys past L do not count: masked), and the
  // position of its first key.
  const auto key_run = [&](int c, const int (&raw)[kKu], int& first) {
    first = __shfl_sync(kFull, raw[0], 0);
    bool ok = true;
#pragma unroll
    for (int u = 0; u < kKu; ++u) ok = ok && (c * kBk + 32 * u + lane >= L || raw[u] - 32 * u - lane == first);
    return __all_sync(kFull, ok) != 0;
  };
  // The mask as bits (DeviceBatch::mask_bits): row il's bits from the warp's first key of chunk c,
  // c * kBk + kw * kKW, on are bits mrow[rr] + c * kBk on of the sequence's (bit k of its mask at bit
  // mask_offsets[b] + k), so a chunk's (at most 32) keys of the row lie in two words, the same bit
  // offset mshift[rr] into the first at every chunk (kBk is a multiple of 32). The words are loaded
  // a chunk ahead and joined when used (mask_bits_of); rows past nq read none.
  int mrow[2], mshift[2];
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    const int il = 16 * wq + g + 8 * rr;
    const int64_t bit = a.batch.mask_offsets[b] + static_cast<int64_t>(i0 + min(il, nq - 1)) * L + kw * kKW;
    mrow[rr] = il < nq ? static_cast<int>(bit >> 5) : -1;  // word index (checked to fit at launch)
    mshift[rr] = static_cast<int>(bit & 31);
  }
  const auto load_mask = [&](int c, uint32_t (&mw)[2][2]) {
    const int kept = min(kKW, L - (c * kBk + kw * kKW));  // the warp's keys of chunk c below L
#pragma unroll
    for (int rr = 0; rr < 2; ++rr) {
      const bool any = mrow[rr] >= 0 && kept > 0;
      const int w = mrow[rr] + c * (kBk / 32);
      mw[rr][0] = any ? a.batch.mask_bits[w] : 0u;
      mw[rr][1] = any && mshift[rr] + kept > 32 ? a.batch.mask_bits[w + 1] : 0u;
    }
  };
  // Chunk c's bits of row rr as the accumulators use them: bit 8n + e = key c * kBk + kw * kKW + 8n +
  // 2qd + e kept (keys past L: 0).
  const auto mask_bits_of = [&](int c, const uint32_t (&mw)[2][2], int rr) {
    uint32_t x = __funnelshift_r(mw[rr][0], mw[rr][1], mshift[rr]);
    const int kept = L - (c * kBk + kw * kKW);
    if (kept < 32) x &= kept > 0 ? (1u << kept) - 1u : 0u;
    return x >> (2 * qd);
  };

  const int nc = kSplit ? part_nc : (L + kBk - 1) / kBk;
  int raw[kKu], ctmn[kKt], ctmx[kKt];
  load_pos(c0, raw);
  tile_ranges(c0, raw, ctmn, ctmx);
  int cfirst = 0;  // runs: chunk c's first key position and whether its keys run contiguously
  bool crun = kRuns && key_run(c0, raw, cfirst);
  if (nc > c0 + 1) load_pos(c0 + 1, raw);
  uint32_t mw_next[2][2];
  load_mask(c0, mw_next);
  // A chunk's first window into the ring: the relative rows (at most kRw) that its keys, with
  // tile ranges tmn / tmx, and the block's rows index.
  const auto fetch_first_window = [&](const int (&tmn)[kKt], const int (&tmx)[kKt]) {
    int kmn = tmn[0], kmx = tmx[0];
#pragma unroll
    for (int t = 1; t < kKt; ++t) kmn = min(kmn, tmn[t]), kmx = max(kmx, tmx[t]);
    const int lo = clamp_rel(qmn - kmx + half, R), hi = clamp_rel(qmx - kmn + half, R);
    fetch_window(lo, min(hi, lo + kRw - 1));
  };
  fetch_first_window(ctmn, ctmx);
  cp_commit();

  uint32_t qf[kKd][4];  // the warp's 16 query rows as A fragments
  float o[D / 8][4];    // O of the warp's rows (keys of its share), unnormalised
#pragma unroll
  for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};  // base-2 max, thread's part of the sum

  for (int c = c0; c < nc; ++c) {
    const int cur = (c - c0) & 1;
    int kmn = ctmn[0], kmx = ctmx[0];
#pragma unroll
    for (int t = 1; t < kKt; ++t) kmn = min(kmn, ctmn[t]), kmx = max(kmx, ctmx[t]);
    // The warp's keys' range (WQ = 1: its own 16-key tile).
    int wkmn = kmn, wkmx = kmx;
    if constexpr (kWK > 1) {
#pragma unroll
      for (int t = 0; t < kKt; ++t)
        if (t == kw) wkmn = ctmn[t], wkmx = ctmx[t];
    }
    const int rlo = clamp_rel(qmn - kmx + half, R), rhi = clamp_rel(qmx - kmn + half, R);
    const int nsub = (rhi - rlo) / kRw + 1;
    // Runs: this warp's terms by shuffles (one window, the chunk's keys and the warp's rows run; a
    // warp without valid rows computes nothing either way); all_fast: every warp of the block (then
    // no shared P2C and no barrier before the gathers). kClampRuns (the split kernel): also where
    // indices clamp (|pos_i - pos_j| near or past rel_rows / 2), reading the clamped relative row:
    // T's column c is Q·Kr[clamp(run_base + c)], all of them inside the block's window [rlo, rhi]
    // (clamping is monotonic); else only where none clamps.
    const int run_base = wq_first - cfirst + half - 31;
    const bool fast = kClampRuns ? kRuns && a.fa_shuffle && nsub == 1 && crun && (!warp_rows || wrun)
                                 : kRuns && a.fa_shuffle && nsub == 1 && crun &&
                                       (!warp_rows || (wrun && run_base >= 0 && run_base + 47 <= R - 1));

    cp_wait_all();
    // Chunk c and its first window landed; everyone is done with chunk c-1.
    bool all_fast = false;
    if constexpr (kRuns) all_fast = __syncthreads_and(fast) != 0;
    else __syncthreads();
    if (c == c0) {
#pragma unroll
      for (int kk = 0; kk < kKd; ++kk)
        ldsm_x4(qf[kk], sbase + S::c2p + ((16 * wq + (lane & 15)) * kLdh + kk * 16 + (lane >> 4) * 8) * 2);
      __syncthreads();  // the Q tile is read before any c2p is written over it
    }
    if (rlo < ring_lo || min(rhi, rlo + kRw - 1) > ring_hi) {  // not fetched ahead (defensive: it always is)
      fetch_window(rlo, min(rhi, rlo + kRw - 1));
      cp_commit();
      cp_wait_all();
      __syncthreads();
    }
    // Fetch chunk c+1 (its first window follows once nobody reads the ring any more).
    int ntmn[kKt], ntmx[kKt];
#pragma unroll
    for (int t = 0; t < kKt; ++t) ntmn[t] = ctmn[t], ntmx[t] = ctmx[t];
    int nfirst = 0;
    bool nrun = false;
    if (c + 1 < nc) {
      tile_ranges(c + 1, raw, ntmn, ntmx);
      if constexpr (kRuns) nrun = key_run(c + 1, raw, nfirst);
      if (c + 2 < nc) load_pos(c + 2, raw);
      fetch_chunk(c + 1, cur ^ 1);
      cp_commit();
    }
    // This chunk's mask bits per row (the next chunk's words stay words while their loads are in flight).
    const uint32_t mk[2] = {mask_bits_of(c, mw_next, 0), mask_bits_of(c, mw_next, 1)};
    if (c + 1 < nc) load_mask(c + 1, mw_next);

    // S = Q·K^T over the warp's keys.
    const uint32_t kbuf = sbase + S::k + cur * kBk * kLdh * 2;
    const uint32_t vbuf = sbase + S::v + cur * kBk * kLdh * 2;
    float s[kNt][4];
#pragma unroll
    for (int n = 0; n < kNt; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int n2 = 0; n2 < kNt / 2; ++n2) {
      const uint32_t row = kbuf + ((kw * kKW + 16 * n2 + (lane & 7) + (lane >> 4) * 8) * kLdh + ((lane >> 3) & 1) * 8) * 2;
      mma_b16<T>(s[2 * n2], s[2 * n2 + 1], qf, row);
    }

    // Runs: the warp's position terms in registers, gathered by shuffles (see the top of the file).
    const auto run_terms = [&] {
      if (!warp_rows) return;
      // Runs: the score at (row g + 8h, key 8n + 2qd + e) takes column / row c = u_e + 8(h - n) of T / T2
      // (u_e = 31 + g - 2qd - e, in [24, 38]): T's from lane 4g + ((u_e & 7) >> 1) (the same row), T2's
      // from lane 4(u_e & 7) + qd (the same key). The lane handing a value out serves one reader per e,
      // whose u decides the register: tile (u >> 3) + h - n, u >> 3 being 3 or 4 (hi_*), and for T the
      // column's parity (odd_c).
      int src_c[2], src_p[2];
      bool hi_c[2], odd_c[2], hi_p[2];
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int u = 31 + g - 2 * qd - e;
        src_c[e] = 4 * g + ((u & 7) >> 1);
        src_p[e] = 4 * (u & 7) + qd;
        const int a0 = 31 + g - e, uc = a0 - 2 * (((a0 >> 1) - qd) & 3);  // u of the quad lane reading this one's T
        hi_c[e] = uc >= 32, odd_c[e] = (uc & 1) != 0;
        const int gr = (g + 1 + 2 * qd + e) & 7;  // g of the lane (same qd) reading this one's T2
        hi_p[e] = 31 + gr - 2 * qd - e >= 32;
      }
      // T = Q·Kr[run_base, run_base + 48)^T (rows clamped where kClampRuns): n8 tile t of columns [8t, 8t + 8), as C2P's window
      // tiles. Key tiles 0, 1 read T's tiles 2..5, key tiles 2, 3 tiles 0..3: tiles 0, 1 are computed
      // once 4, 5 are no longer needed (fewer registers live).
      float tc[6][4];
      const auto c2p_pair = [&](int t) {  // T's tiles 2t, 2t + 1
        tc[2 * t][0] = tc[2 * t][1] = tc[2 * t][2] = tc[2 * t][3] = 0.0f;
        tc[2 * t + 1][0] = tc[2 * t + 1][1] = tc[2 * t + 1][2] = tc[2 * t + 1][3] = 0.0f;
        const int r = run_row<kClampRuns>(run_base + 16 * t + (lane & 7) + (lane >> 4) * 8, R);
        mma_b16<T>(tc[2 * t], tc[2 * t + 1], qf, sbase + S::kr + ((r % kRing) * kLdh + ((lane >> 3) & 1) * 8) * 2);
      };
      c2p_pair(1);
      c2p_pair(2);
      static_assert(!kRuns || kNt == 4, "runs: two pairs of key tiles");
#pragma unroll
      for (int n2 = 0; n2 < kNt / 2; ++n2) {
        if (n2 == 1) c2p_pair(0);
        // T2 = Qr[run_base, run_base + 48)·K^T over key tiles 2n2, 2n2 + 1: m16 tile m, n8 tile nn.
        float tp[3][2][4];
#pragma unroll
        for (int m = 0; m < 3; ++m)
#pragma unroll
          for (int nn = 0; nn < 2; ++nn) tp[m][nn][0] = tp[m][nn][1] = tp[m][nn][2] = tp[m][nn][3] = 0.0f;
        const uint32_t krow = kbuf + ((16 * n2 + (lane & 7) + (lane >> 4) * 8) * kLdh + ((lane >> 3) & 1) * 8) * 2;
#pragma unroll
        for (int kk = 0; kk < kKd; ++kk) {
          uint32_t bb[4];
          ldsm_x4(bb, krow + kk * 32);
#pragma unroll
          for (int m = 0; m < 3; ++m) {
            const int r = run_row<kClampRuns>(run_base + 16 * m + (lane & 15), R);
            uint32_t af[4];
            ldsm_x4(af, sbase + S::qr + ((r % kRing) * kLdh + (lane >> 4) * 8) * 2 + kk * 32);
            mma<T>(tp[m][0], af, bb[0], bb[1]);
            mma<T>(tp[m][1], af, bb[2], bb[3]);
          }
        }
        // Each score adds c2p + p2c as the shared-memory gather does.
#pragma unroll
        for (int nn = 0; nn < 2; ++nn) {
          const int n = 2 * n2 + nn;
#pragma unroll
          for (int hh = 0; hh < 2; ++hh)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int lo = 3 + hh - n;  // the reader's tile is lo or lo + 1 (u >> 3 = 3 or 4)
              const float c_lo = odd_c[e] ? tc[lo][2 * hh + 1] : tc[lo][2 * hh];
              const float c_hi = odd_c[e] ? tc[lo + 1][2 * hh + 1] : tc[lo + 1][2 * hh];
              const float p_lo = tp[lo >> 1][nn][2 * (lo & 1) + e];
              const float p_hi = tp[(lo + 1) >> 1][nn][2 * ((lo + 1) & 1) + e];
              const float cv = __shfl_sync(kFull, hi_c[e] ? c_hi : c_lo, src_c[e]);
              const float pv = __shfl_sync(kFull, hi_p[e] ? p_hi : p_lo, src_p[e]);
              s[n][2 * hh + e] += cv + pv;
            }
        }
      }
    };

    // Position terms: a fast warp's by shuffles (one window; it reads the ring before the barrier
    // below or the one before the gathers, which free the ring), then the others' window by window,
    // every warp taking its share of the block's P2C items for them.
    if (fast) run_terms();
    if (all_fast) __syncthreads();  // every warp's last read of the ring in this chunk (the next window follows)
    for (int sub = 0; sub < (all_fast ? 0 : nsub); ++sub) {
      const int r0 = rlo + sub * kRw, nr = min(kRw, rhi - r0 + 1);
      if (sub > 0) {  // a further window: nobody reads the ring, c2p or p2c any more, then fetch
        __syncthreads();
        if (r0 < ring_lo || r0 + nr - 1 > ring_hi) {
          fetch_window(r0, r0 + nr - 1);
          cp_commit();
          cp_wait_all();
          __syncthreads();
        }
      }
      // Ring row address of window row r0 + rw for this lane's ldmatrix row (B operand layout).
      const auto ring_row = [&](int tile) {
        const int r = r0 + 16 * tile + (lane & 7) + (lane >> 4) * 8;
        return static_cast<uint32_t>(((r % kRing) * kLdh + ((lane >> 3) & 1) * 8) * 2);
      };
      // Window tile t's two n8 accumulators into rows [row, row + 16) of an fp32 buffer (c2p or p2c).
      const auto store_tile = [&](float* buf, int row, int t, const float (&acc)[2][4]) {
#pragma unroll
        for (int m = 0; m < 2; ++m) {
          const int col = 16 * t + 8 * m + 2 * qd;
          *reinterpret_cast<float2*>(buf + (row + g) * kLdf + col) = make_float2(acc[m][0], acc[m][1]);
          *reinterpret_cast<float2*>(buf + (row + g + 8) * kLdf + col) = make_float2(acc[m][2], acc[m][3]);
        }
      };
      // C2P of the warp's rows: the window tiles its rows x keys index.
      const auto c2p_tiles = [&] {
        if (!warp_rows || wkmn > wkmx) return;
        const int lo = max(clamp_rel(wqmn - wkmx + half, R) - r0, 0);
        const int hi = min(clamp_rel(wqmx - wkmn + half, R) - r0, nr - 1);
        if (lo > hi) return;
#pragma unroll
        for (int i = 0; i < kRw / 16; ++i) {  // window tiles [lo / 16, hi / 16] (hi < nr <= kRw)
          const int t = (lo >> 4) + i;
          if (t > hi >> 4) break;
          float acc[2][4] = {};
          mma_b16<T>(acc[0], acc[1], qf, sbase + S::kr + ring_row(t));
          store_tile(c2p, 0, t, acc);
        }
      };
      // P2C: (16-key tile kt) x (window tile t) items; WQ = 4 deals the chunk's items round the
      // warps, WQ = 1 gives each warp its own key tile.
      const auto p2c_items = [&] {
        int tlo[kKt], tn[kKt], items = 0;
#pragma unroll
        for (int t = 0; t < kKt; ++t) {
          tlo[t] = 0, tn[t] = 0;
          if (ctmn[t] > ctmx[t] || (kWK > 1 && t != kw)) continue;
          const int lo = max(clamp_rel(qmn - ctmx[t] + half, R) - r0, 0);
          const int hi = min(clamp_rel(qmx - ctmn[t] + half, R) - r0, nr - 1);
          if (lo > hi) continue;
          tlo[t] = lo >> 4, tn[t] = (hi >> 4) - (lo >> 4) + 1;
          items += tn[t];
        }
        // At most kRw / 16 window tiles per key tile (see c2p_tiles): WQ = 1 a warp has its own
        // key tile's, WQ = 4 the block's kKt tiles' are dealt round the warps.
        constexpr int kWarpItems = kWK > 1 ? kRw / 16 : (kKt * (kRw / 16) + kWarps - 1) / kWarps;
#pragma unroll
        for (int i = 0; i < kWarpItems; ++i) {
          const int it = kWK > 1 ? i : warp + kWarps * i;
          if (it >= items) break;
          // item it -> (key tile kt, window tile t): tiles in order, tn[u] items each
          int kt = 0, t = it, base = 0;
#pragma unroll
          for (int u = 0; u + 1 < kKt; ++u)
            if (kt == u && t >= tn[u]) t -= tn[u], kt = u + 1;
#pragma unroll
          for (int u = 0; u < kKt; ++u)
            if (u == kt) base = tlo[u];
          t += base;
          float acc[2][4] = {};
          const uint32_t ka = kbuf + ((16 * kt + (lane & 15)) * kLdh + (lane >> 4) * 8) * 2;
          const uint32_t addr = sbase + S::qr + ring_row(t);
#pragma unroll
          for (int kk = 0; kk < kKd; ++kk) {
            uint32_t af[4], bb[4];
            ldsm_x4(af, ka + kk * 32);
            ldsm_x4(bb, addr + kk * 32);
            mma<T>(acc[0], af, bb[0], bb[1]);
            mma<T>(acc[1], af, bb[2], bb[3]);
          }
          store_tile(p2c, 16 * kt, t, acc);
        }
      };
      // Gather: each accumulator element adds its terms (pairs that index this window). Every
      // load first, from an index inside the window (0 where the pair's index is outside it: a
      // value read and dropped), then the adds where the index is inside: the 2 x 16 loads issue
      // back to back (one guarded load-and-add at a time compiled to 16 serialized branches).
      const auto gather = [&](bool add_c2p, bool add_p2c) {
        float t[2][kNt][2];
        bool in[2][kNt][2];
#pragma unroll
        for (int rr = 0; rr < 2; ++rr)
#pragma unroll
          for (int n = 0; n < kNt; ++n)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int pk = posk_s[cur * kBk + kw * kKW + 8 * n + 2 * qd + e];  // the key's position
              const int idx = clamp_rel(pq[rr] - pk + half, R) - r0;
              const int jl = kw * kKW + 8 * n + 2 * qd + e;
              in[rr][n][e] = static_cast<unsigned>(idx) < static_cast<unsigned>(nr);
              const int at = in[rr][n][e] ? idx : 0;
              t[rr][n][e] = (add_c2p ? c2p[(g + 8 * rr) * kLdf + at] : 0.0f) + (add_p2c ? p2c[jl * kLdf + at] : 0.0f);
            }
#pragma unroll
        for (int rr = 0; rr < 2; ++rr)
#pragma unroll
          for (int n = 0; n < kNt; ++n)
#pragma unroll
            for (int e = 0; e < 2; ++e)
              if (in[rr][n][e]) s[n][2 * rr + e] += t[rr][n][e];
      };
      if constexpr (kWK == 1) {
        if (!fast) c2p_tiles();
        p2c_items();
        __syncthreads();  // every warp gathers every key's p2c
        if (!fast) gather(true, true);
      } else {  // one buffer per warp: C2P, its gather, then P2C, its gather
        c2p_tiles();
        __syncwarp();
        gather(true, false);
        __syncwarp();
        p2c_items();
        __syncwarp();
        gather(false, true);
      }
    }
    // The first window of chunk c+1 into the ring, overlapping the softmax and P·V. Only after a
    // barrier that follows every warp's last read of the ring in this chunk (WQ = 4: the one
    // before the last gather; WQ = 1: this one), so no copy ever writes a slot a warp may still
    // read (nor need the rows it overwrites be proved unused); chunk c+1 waits for it at its top.
    if (c + 1 < nc) {
      if constexpr (kWK > 1) __syncthreads();
      fetch_first_window(ntmn, ntmx);
      cp_commit();
    }

    // Mask and online softmax (base 2), rows g and g+8 (a quad of lanes per row).
#pragma unroll
    for (int rr = 0; rr < 2; ++rr) {
      float mx = -INFINITY;
#pragma unroll
      for (int n = 0; n < kNt; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float x = (mk[rr] >> (8 * n + e)) & 1u ? s[n][2 * rr + e] * sl2 : -INFINITY;
          s[n][2 * rr + e] = x;
          mx = fmaxf(mx, x);
        }
      mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, 2));
      const float m_new = fmaxf(m_run[rr], mx);
      const float alpha = m_new == -INFINITY ? 1.0f : exp2_approx(m_run[rr] - m_new);
      float sum = 0.0f;
#pragma unroll
      for (int n = 0; n < kNt; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float x = s[n][2 * rr + e];
          const float p = x == -INFINITY ? 0.0f : exp2_approx(x - m_new);
          s[n][2 * rr + e] = p;
          sum += p;
        }
      l_run[rr] = l_run[rr] * alpha + sum;
      m_run[rr] = m_new;
#pragma unroll
      for (int n = 0; n < D / 8; ++n) o[n][2 * rr] *= alpha, o[n][2 * rr + 1] *= alpha;
    }
    // O += P·V: P's accumulators become A fragments (16 keys per k-step), V via ldmatrix.trans.
#pragma unroll
    for (int ks = 0; ks < kKW / 16; ++ks) {
      uint32_t pa[4];
      pa[0] = pack2<T>(s[2 * ks][0], s[2 * ks][1]);
      pa[1] = pack2<T>(s[2 * ks][2], s[2 * ks][3]);
      pa[2] = pack2<T>(s[2 * ks + 1][0], s[2 * ks + 1][1]);
      pa[3] = pack2<T>(s[2 * ks + 1][2], s[2 * ks + 1][3]);
      const uint32_t row = vbuf + ((kw * kKW + 16 * ks + (lane & 7) + ((lane >> 3) & 1) * 8) * kLdh + (lane >> 4) * 8) * 2;
#pragma unroll
      for (int np = 0; np < D / 16; ++np) {
        uint32_t bb[4];
        ldsm_x4_t(bb, row + np * 32);
        mma<T>(o[2 * np], pa, bb[0], bb[1]);
        mma<T>(o[2 * np + 1], pa, bb[2], bb[3]);
      }
    }
#pragma unroll
    for (int t = 0; t < kKt; ++t) ctmn[t] = ntmn[t], ctmx[t] = ntmx[t];
    crun = nrun, cfirst = nfirst;
  }

  // ---- output ---------------------------------------------------------------------------------
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    l_run[rr] += __shfl_xor_sync(kFull, l_run[rr], 1);
    l_run[rr] += __shfl_xor_sync(kFull, l_run[rr], 2);
  }
  T* out = static_cast<T*>(a.out) + static_cast<size_t>(row0 + i0) * a.ld_out + h * D;
  if constexpr (kWK == 1) {
#pragma unroll
    for (int rr = 0; rr < 2; ++rr) {
      const int il = 16 * wq + g + 8 * rr;
      if (il >= nq) continue;
      if constexpr (kSplit) {  // the part's unnormalised O and (max, sum), merged by attention_fa_merge_kernel
        float* po = sp.o + part_at(il) * D;
#pragma unroll
        for (int n = 0; n < D / 8; ++n)
          *reinterpret_cast<float2*>(po + 8 * n + 2 * qd) = make_float2(o[n][2 * rr], o[n][2 * rr + 1]);
        if (qd == 0) sp.ml[2 * part_at(il)] = m_run[rr], sp.ml[2 * part_at(il) + 1] = l_run[rr];
        continue;
      }
      const float inv = l_run[rr] > 0.0f ? 1.0f / l_run[rr] : 0.0f;  // no kept key: zeros
#pragma unroll
      for (int n = 0; n < D / 8; ++n)
        *reinterpret_cast<uint32_t*>(out + static_cast<size_t>(il) * a.ld_out + 8 * n + 2 * qd) =
            pack2<T>(o[n][2 * rr] * inv, o[n][2 * rr + 1] * inv);
    }
  } else {
    // Merge the warps' key shares: out_i = sum_w 2^(m_w - M) O_w / sum_w 2^(m_w - M) l_w.
    constexpr int kLdo = S::kLdo;
    cp_wait_all();
    __syncthreads();  // every warp is done with the buffers
    float* mo = reinterpret_cast<float*>(smem);
    float* ml = reinterpret_cast<float*>(smem + S::merge_ml);
#pragma unroll
    for (int rr = 0; rr < 2; ++rr) {
      const int r = g + 8 * rr;
#pragma unroll
      for (int n = 0; n < D / 8; ++n)
        *reinterpret_cast<float2*>(mo + (warp * 16 + r) * kLdo + 8 * n + 2 * qd) = make_float2(o[n][2 * rr], o[n][2 * rr + 1]);
      if (qd == 0) ml[2 * (warp * 16 + r)] = m_run[rr], ml[2 * (warp * 16 + r) + 1] = l_run[rr];
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < (kBq * (D / 2) + kThreads - 1) / kThreads; ++i) {
      const int e = tid + i * kThreads;
      if (e >= nq * (D / 2)) break;
      const int r = e / (D / 2), cc = 2 * (e % (D / 2));
      float mmax = -INFINITY;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) mmax = fmaxf(mmax, ml[2 * (w * 16 + r)]);
      float n0 = 0.0f, n1 = 0.0f, den = 0.0f;
      if (mmax != -INFINITY) {
#pragma unroll
        for (int w = 0; w < kWarps; ++w) {
          const float f = exp2_approx(ml[2 * (w * 16 + r)] - mmax);
          const float2 ow = *reinterpret_cast<const float2*>(mo + (w * 16 + r) * kLdo + cc);
          n0 += f * ow.x, n1 += f * ow.y, den += f * ml[2 * (w * 16 + r) + 1];
        }
      }
      if constexpr (kSplit) {  // the part's (the block's warps merged) O and (max, sum)
        *reinterpret_cast<float2*>(sp.o + part_at(r) * D + cc) = make_float2(n0, n1);
        if (cc == 0) sp.ml[2 * part_at(r)] = mmax, sp.ml[2 * part_at(r) + 1] = den;
        continue;
      }
      const float inv = den > 0.0f ? 1.0f / den : 0.0f;
      *reinterpret_cast<uint32_t*>(out + static_cast<size_t>(r) * a.ld_out + cc) = pack2<T>(n0 * inv, n1 * inv);
    }
  }
#endif
}

// The key split's merge: one thread per (row, head, column pair), over the parts of sp.
template <typename T, int D>
__global__ void __launch_bounds__(256) attention_fa_merge_kernel(AttentionArgs a, SplitParts sp) {
  pdl_begin();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const size_t e = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t per_part = static_cast<size_t>(a.batch.rows) * a.num_heads;  // (row, head) pairs
  if (e >= per_part * (D / 2)) return;
  const size_t rh = e / (D / 2);
  const int cc = 2 * static_cast<int>(e % (D / 2)), h = static_cast<int>(rh % a.num_heads);
  const size_t r = rh / a.num_heads;
  float mmax = -INFINITY;
  for (int p = 0; p < sp.parts; ++p) mmax = fmaxf(mmax, sp.ml[2 * (p * per_part + rh)]);
  float n0 = 0.0f, n1 = 0.0f, den = 0.0f;
  if (mmax != -INFINITY) {  // else no part kept a key: zeros
    for (int p = 0; p < sp.parts; ++p) {
      const size_t at = p * per_part + rh;
      const float f = exp2_approx(sp.ml[2 * at] - mmax);  // 2^-inf = 0 for a part without kept keys
      const float2 op = *reinterpret_cast<const float2*>(sp.o + at * D + cc);
      n0 += f * op.x, n1 += f * op.y, den += f * sp.ml[2 * at + 1];
    }
  }
  const float inv = den > 0.0f ? 1.0f / den : 0.0f;
  T* out = static_cast<T*>(a.out) + r * a.ld_out + h * D + cc;
  *reinterpret_cast<uint32_t*>(out) = pack2<T>(n0 * inv, n1 * inv);
#endif
}

constexpr int kMaxParts = 8;
// The automatic split's parts (each keeps at least one 32-key chunk of the longest sequence).
constexpr int kAutoParts = 4;

// Parts per row block of the 64-row shape (FlashSplit::kAuto): kAutoParts where its grid has fewer
// blocks than SMs and the longest sequence at least kAutoParts chunks of 32 keys, else 1 (also for
// the 16-row shape, and with kOff). On the H200 (session 20, docs/benchmarks.md) one sequence of
// 128-512 tokens ran faster so than in the earlier picks, the 16-row shape (split in 2 from 256
// tokens at 4 heads) or 64 rows in 2 parts (12 heads: L128 9.1 us against 10.2, L256 14.2 against
// 21.6, L512 34.5 against 35.3; 4 heads: L128 8.5 against 10.1, L512 16.9 against 23.8); below 128
// tokens it was no better. Head_dim 64 only (the split kernel is not built at 16: ptxas spilled its
// 16-row shape there, and the dispatch runs head_dim 16 on the WMMA kernel anyway).
int split_parts_by_grid(const AttentionArgs& a, int rows, int sms) {
  if (a.fa_split == FlashSplit::kOff || a.head_dim != 64 || rows != 64) return 1;
  const long blocks = static_cast<long>((a.batch.max_length + 63) / 64) * a.num_heads * a.batch.num_sequences;
  const int chunks = (a.batch.max_length + 31) / 32;
  return blocks < sms && chunks >= kAutoParts ? kAutoParts : 1;
}

size_t split_bytes(const AttentionArgs& a, int parts) {
  return parts <= 1 ? 0 : static_cast<size_t>(parts) * a.batch.rows * a.num_heads * (a.head_dim + 2) * sizeof(float);
}

// The block shape and the parts disentangled_attention_fa(a, stream, rows_per_block, split_parts)
// runs (0: by grid size, as the WMMA kernel picks its shape; by AttentionArgs::fa_split); the
// device is queried only where the grid decides.
struct Plan {
  int rows = 64, parts = 1;
};
Plan plan(const AttentionArgs& a, int rows_per_block, int split_parts, const char* what) {
  const bool by_grid = rows_per_block == 0 || (split_parts == 0 && a.fa_split == FlashSplit::kAuto);
  const int sms = by_grid ? device_limits(what).sms : 0;
  Plan p;
  // By grid: the 64-row shape where the automatic split applies to it, else as the WMMA kernel picks.
  const bool split64 = split_parts == 0 && split_parts_by_grid(a, 64, sms) > 1;
  p.rows = rows_per_block != 0 ? rows_per_block : split64 || !attention_grid_is_small(a, sms) ? 64 : 16;
  p.parts = split_parts != 0 ? split_parts : split_parts_by_grid(a, p.rows, sms);
  return p;
}

template <typename T, int D, int WQ>
void launch_shape(const AttentionArgs& a, int parts, cudaStream_t stream) {
  constexpr int kBq = Shape<D, WQ>::kBq;
  const dim3 grid((a.batch.max_length + kBq - 1) / kBq, a.num_heads, a.batch.num_sequences);
  constexpr const char* what = "cuda::disentangled_attention (fa)";
  constexpr int bytes = Shape<D, WQ>::bytes;
  if (parts <= 1) {
    launch_with_smem(attention_fa_kernel<T, D, WQ, false>, grid, kThreads, bytes, stream, what, a, SplitParts{});
    return;
  }
  if constexpr (D == 64) {  // the split at head_dim 64 only (split_parts_by_grid; checked by the caller)
    SplitParts sp;
    sp.o = static_cast<float*>(a.fa_workspace);
    sp.ml = sp.o + static_cast<size_t>(parts) * a.batch.rows * a.num_heads * D;
    sp.parts = parts;
    const dim3 split_grid(grid.x, grid.y, grid.z * parts);
    launch_with_smem(attention_fa_kernel<T, D, WQ, true>, split_grid, kThreads, bytes, stream, what, a, sp);
    const size_t threads = static_cast<size_t>(a.batch.rows) * a.num_heads * (D / 2);
    launch_kernel(attention_fa_merge_kernel<T, D>, dim3(static_cast<unsigned>((threads + 255) / 256)), dim3(256), 0,
                  stream, "cuda::disentangled_attention (fa split merge)", a, sp);
  }
}

template <typename T>
void launch(const AttentionArgs& a, int rows, int parts, cudaStream_t stream) {
  if (a.head_dim == 64) {
    if (rows == 64) launch_shape<T, 64, 4>(a, parts, stream);
    else launch_shape<T, 64, 1>(a, parts, stream);
  } else {
    if (rows == 64) launch_shape<T, 16, 4>(a, parts, stream);
    else launch_shape<T, 16, 1>(a, parts, stream);
  }
}

bool aligned(const void* p, size_t n) { return reinterpret_cast<uintptr_t>(p) % n == 0; }

}  // namespace

bool attention_fa_supported(const AttentionArgs& a) {
  // head_dim 16 is built and disentangled_attention_fa runs it, but the dispatch leaves it to the
  // WMMA kernel for now: wrong on the H200 in session 9 (the ptxas miscompile at the top of this
  // file), it passes its kernel test and racecheck since the work-around (session 10) but has
  // not yet run end to end (the tiny test model's e2e cases, scripts/test_gpu_engine.sh).
  if (a.head_dim != 64 || (a.compute != DType::kF16 && a.compute != DType::kBF16)) return false;
  if (a.type != a.compute || !aligned(a.out, 4) || a.ld_out % 2 != 0) return false;
  DeviceLimits d;
  return query_device_limits(d) && d.major >= 8 && d.smem_optin >= Shape<64, 1>::bytes &&
         d.smem_optin >= Shape<64, 4>::bytes;
}

size_t attention_fa_workspace_bytes(const AttentionArgs& a, int rows_per_block, int split_parts) {
  // Not the flash kernel's arguments (16-bit storage computed in that type): the dispatch runs another kernel.
  if (a.type != a.compute || (a.type != DType::kF16 && a.type != DType::kBF16)) return 0;
  if (a.batch.num_sequences <= 0 || split_parts == 1 || (split_parts == 0 && a.fa_split == FlashSplit::kOff)) return 0;
  return split_bytes(a, plan(a, rows_per_block, split_parts, "cuda::attention_fa_workspace_bytes").parts);
}

void disentangled_attention_fa(const AttentionArgs& a, cudaStream_t stream, int rows_per_block, int split_parts) {
  constexpr const char* what = "cuda::disentangled_attention (fa)";
  if (rows_per_block != 0 && rows_per_block != 16 && rows_per_block != 64)
    throw InternalError(std::string(what) + ": rows_per_block must be 0 (by grid size), 16 or 64");
  if (split_parts < 0 || split_parts > kMaxParts)
    throw InternalError(std::string(what) + ": split_parts must be 0 (by AttentionArgs::fa_split and the grid) to " +
                        std::to_string(kMaxParts));
  if (a.type != a.compute || (a.type != DType::kF16 && a.type != DType::kBF16) || (a.head_dim != 64 && a.head_dim != 16))
    throw InternalError(std::string(what) + ": needs F16 or BF16 storage computed in that type and head_dim 64 or 16");
  const size_t es = 2;
  if (!aligned(a.q, 16) || !aligned(a.k, 16) || !aligned(a.v, 16) || !aligned(a.q_rel, 16) || !aligned(a.k_rel, 16) ||
      (a.ld_qkv * es) % 16 != 0 || (a.ld_rel * es) % 16 != 0 || !aligned(a.out, 4) || a.ld_out % 2 != 0)
    throw InternalError(std::string(what) +
                        ": q, k, v, q_rel, k_rel and their row strides must be 16-byte aligned, out 4-byte with an even row stride");
  if (a.batch.num_sequences <= 0) return;
  if (a.batch.mask_bits == nullptr || a.batch.mask_span <= 0 || a.batch.mask_span / 32 >= INT_MAX)
    throw InternalError(std::string(what) + ": needs the masks as bits (DeviceBatch::mask_bits, mask_span below 2^36; " +
                        "cuda::pack_mask_bits), got mask_span " + std::to_string(a.batch.mask_span));
  const auto [rows, parts] = plan(a, rows_per_block, split_parts, what);
  if (parts > 1 && a.head_dim != 64)
    throw InternalError(std::string(what) + ": the key split runs at head_dim 64 only, got split_parts " +
                        std::to_string(parts) + " at head_dim " + std::to_string(a.head_dim));
  if (parts > 1 && a.batch.rows < a.batch.max_length)  // the partial results are indexed by packed row
    throw InternalError(std::string(what) + ": the key split needs DeviceBatch::rows (the packed rows), got " +
                        std::to_string(a.batch.rows));
  const size_t need = split_bytes(a, parts);
  if (need > 0 && (a.fa_workspace == nullptr || a.fa_workspace_bytes < need || !aligned(a.fa_workspace, 16)))
    throw InternalError(std::string(what) + ": the key split needs AttentionArgs::fa_workspace (16-byte aligned) of " +
                        std::to_string(need) + " bytes (attention_fa_workspace_bytes), got " +
                        std::to_string(a.fa_workspace_bytes));
  if (a.type == DType::kF16) launch<__half>(a, rows, parts, stream);
  else launch<__nv_bfloat16>(a, rows, parts, stream);
}

}  // namespace rexnlu::backends::cuda
