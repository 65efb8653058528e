// Tensor-core (WMMA, sm_80+) fused disentangled attention, flash style, for head_dim 64 or 16
// and fp16/bf16 arithmetic (semantics: attention.cu and the CPU kernel):
//   S[i,j] = (Q_i·K_j + Q_i·Kr[idx] + K_j·Qr[idx]) / s,  idx = clamp(pos_i - pos_j + rel_rows/2, 0, rel_rows-1)
//   P = XSoftmax(S, mask);  out_i = sum_j P[i,j] V_j
// One block = one sequence, one head, 4 warps arranged as WQ query warps x WK = 4/WQ key groups:
// 16*WQ query rows, warp (wq, g) owns rows [16wq, 16wq+16) and key group g walks the key chunks
// g, g+WK, ... (32 keys each) with its own K/V and position buffers, synchronised on its own
// named barrier. WQ = 4 (64 rows, one key group) unless that grid is small; WQ = 1 (16 rows,
// the keys split four ways) for small batches. Per chunk: S = Q·K^T on the tensor cores (Q's
// fragments stay in registers for the whole kernel); then for each window of relative rows the
// tile x chunk can index (one window when positions run contiguously), C2P = Q·Kr_win^T (each
// warp only the 16-row tiles of the window its own rows index) and P2C = K·Qr_win^T (the key
// tiles' needed window tiles shared among the group's warps) on the tensor cores, and each pair
// gathers its two terms from them; then an online softmax (running max and sum per row, fp32,
// two lanes per row) and O += P·V, O held in WMMA accumulators in registers (rescaled per chunk
// through a per-row broadcast tile). At the end the key groups' (max, sum, O) are merged.
// Inputs may be stored in fp32 (rounded to the arithmetic type when staged) or in the arithmetic
// type; products accumulate in fp32; P is rounded to the arithmetic type for P·V (as flash
// attention does).
#include <mma.h>

#include <climits>

#include "backends/cuda/attention_mma.h"
#include "backends/cuda/types.cuh"
#include "rexnlu/error.h"

namespace rexnlu::backends::cuda {

namespace {

constexpr int kBk = 32;       // keys per chunk
constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kLdS = kBk + 4;
constexpr int kLdP = kBk + 8;

// Shared-memory layout in bytes for head_dim kD and WQ query warps (every piece a multiple of
// 32 bytes: WMMA needs 256-bit aligned tiles). Pitches: kD + 8 16-bit values, kD + 4 or kBr + 4
// floats. After the chunk loop the front of it is reused for the merge of the key groups.
template <int kD, int WQ>
struct Layout {
  static constexpr int kWK = kWarps / WQ;   // key groups
  static constexpr int kBq = 16 * WQ;       // query rows per block
  static constexpr int kBr = kBq + kBk;     // relative rows per window (>= kBq + kBk - 1, a multiple of 16)
  static constexpr int kLdh = kD + 8;
  static constexpr int kLdR = kBr + 4;
  static constexpr int kLdO = kD + 4;
  static constexpr int q = 0;
  // one key group's buffers, at group + g * group_bytes
  static constexpr int k = 0;
  static constexpr int v = k + kBk * kLdh * 2;
  static constexpr int kr = v + kBk * kLdh * 2;
  static constexpr int qr = kr + kBr * kLdh * 2;
  static constexpr int s = qr + kBr * kLdh * 2;
  static constexpr int c2p = s + kBq * kLdS * 4;
  static constexpr int p2c = c2p + kBq * kLdR * 4;
  static constexpr int p = p2c + kBk * kLdR * 4;
  static constexpr int posk = p + kBq * kLdP * 2;
  static constexpr int group_bytes = posk + kBk * 4;
  static constexpr int group = q + kBq * kLdh * 2;
  static constexpr int tiles = group + kWK * group_bytes;  // one 16 x 16 fp32 tile per warp
  static constexpr int posq = tiles + kWarps * 256 * 4;
  static constexpr int bytes = posq + kBq * 4;
  // the merge: every warp's O rows and every row's (max, sum) per key group
  static constexpr int merge_o = 0;
  static constexpr int merge_ml = merge_o + kWK * kBq * kLdO * 4;
  static_assert(merge_ml + kWK * kBq * 8 <= bytes, "merge area");
  static_assert(group_bytes % 32 == 0 && group % 32 == 0, "alignment");
};

template <typename Tm> __device__ __forceinline__ Tm cvt(float x) { return from_f32<Tm>(x); }

// Threads [0, nthreads) (tid) copy rows [0, rows) of kD values of Tin to Tm rows of pitch ldh;
// rows [rows, pad_rows) become zero.
template <int kD, int ldh, typename Tin, typename Tm>
__device__ __forceinline__ void stage(Tm* dst, const Tin* src, size_t ld, int rows, int pad_rows, int tid, int nthreads) {
  constexpr int kVec = 16 / sizeof(Tin);
  constexpr int kChunks = kD / kVec;
  for (int e = tid; e < pad_rows * kChunks; e += nthreads) {
    const int r = e / kChunks, c = (e % kChunks) * kVec;
    Tm* d = dst + r * ldh + c;
    if (r < rows) {
      const uint4 raw = *reinterpret_cast<const uint4*>(src + r * ld + c);
      const Tin* v = reinterpret_cast<const Tin*>(&raw);
#pragma unroll
      for (int u = 0; u < kVec; ++u) d[u] = cvt<Tm>(to_f32(v[u]));
    } else {
#pragma unroll
      for (int u = 0; u < kVec; ++u) d[u] = cvt<Tm>(0.0f);
    }
  }
}

// Barrier of key group g's 32*WQ threads (the block's when it is one group, one warp's when
// it is one warp, else named barrier g+1).
template <int WQ>
__device__ __forceinline__ void group_sync(int g) {
  if constexpr (WQ == kWarps) {
    __syncthreads();
  } else if constexpr (WQ == 1) {
    __syncwarp();
  } else {
    asm volatile("bar.sync %0, %1;" ::"r"(g + 1), "n"(32 * WQ) : "memory");
  }
}

using namespace nvcuda;

template <typename Tm>
using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, Tm, wmma::row_major>;
template <typename Tm>
using FragBt = wmma::fragment<wmma::matrix_b, 16, 16, 16, Tm, wmma::col_major>;  // B^T: column-major view of B's rows
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// C[16 x 16] (fp32, pitch ldc) = A · B^T with A in fragments a[kD/16] and B 16 rows of kD (pitch ldh).
template <int kD, int ldh, typename Tm>
__device__ __forceinline__ void mma_tile(const FragA<Tm>* a, const Tm* b, float* c, int ldc) {
  FragC acc;
  wmma::fill_fragment(acc, 0.0f);
#pragma unroll
  for (int kk = 0; kk < kD / 16; ++kk) {
    FragBt<Tm> fb;
    wmma::load_matrix_sync(fb, b + kk * 16, ldh);
    wmma::mma_sync(acc, a[kk], fb, acc);
  }
  wmma::store_matrix_sync(c, acc, ldc, wmma::mem_row_major);
}

template <typename Tin, typename Tm, int kD, int WQ>
__global__ void __launch_bounds__(kThreads) attention_mma_kernel(AttentionArgs a) {
  pdl_begin();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using Lay = Layout<kD, WQ>;
  constexpr int kWK = Lay::kWK, kBq = Lay::kBq, kBr = Lay::kBr;
  constexpr int kLdh = Lay::kLdh, kLdR = Lay::kLdR, kLdO = Lay::kLdO;
  constexpr int kGroupThreads = 32 * WQ;
  extern __shared__ __align__(128) unsigned char smem[];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int wq = warp % WQ, g = warp / WQ, tg = threadIdx.x % kGroupThreads;
  unsigned char* grp = smem + Lay::group + g * Lay::group_bytes;
  Tm* qs = reinterpret_cast<Tm*>(smem + Lay::q);
  Tm* ks = reinterpret_cast<Tm*>(grp + Lay::k);
  Tm* vs = reinterpret_cast<Tm*>(grp + Lay::v);
  Tm* krs = reinterpret_cast<Tm*>(grp + Lay::kr);
  Tm* qrs = reinterpret_cast<Tm*>(grp + Lay::qr);
  float* ss = reinterpret_cast<float*>(grp + Lay::s);
  float* c2p = reinterpret_cast<float*>(grp + Lay::c2p);
  float* p2c = reinterpret_cast<float*>(grp + Lay::p2c);
  Tm* ps = reinterpret_cast<Tm*>(grp + Lay::p);
  int* posk = reinterpret_cast<int*>(grp + Lay::posk);
  float* tile = reinterpret_cast<float*>(smem + Lay::tiles) + warp * 256;
  int* posq = reinterpret_cast<int*>(smem + Lay::posq);

  const int b = blockIdx.z, h = blockIdx.y, i0 = blockIdx.x * kBq;
  const int row0 = a.batch.offsets[b];
  const int L = a.batch.offsets[b + 1] - row0;
  if (i0 >= L) return;
  const int nq = min(kBq, L - i0);
  const int half = a.rel_rows / 2, R = a.rel_rows;
  const float inv_scale = 1.0f / a.scale;
  const auto clamp_rel = [](int x, int rel_rows) { return min(max(x, 0), rel_rows - 1); };

  const Tin* q = static_cast<const Tin*>(a.q) + static_cast<size_t>(row0) * a.ld_qkv + h * kD;
  const Tin* k = static_cast<const Tin*>(a.k) + static_cast<size_t>(row0) * a.ld_qkv + h * kD;
  const Tin* v = static_cast<const Tin*>(a.v) + static_cast<size_t>(row0) * a.ld_qkv + h * kD;
  const Tin* q_rel = static_cast<const Tin*>(a.q_rel) + h * kD;
  const Tin* k_rel = static_cast<const Tin*>(a.k_rel) + h * kD;
  const int32_t* pos = a.batch.position_ids + row0;
  const uint8_t* mask = a.batch.masks + a.batch.mask_offsets[b];

  stage<kD, kLdh, Tin, Tm>(qs, q + static_cast<size_t>(i0) * a.ld_qkv, a.ld_qkv, nq, kBq, threadIdx.x, kThreads);
  if (threadIdx.x < kBq) posq[threadIdx.x] = threadIdx.x < nq ? pos[i0 + threadIdx.x] : pos[i0];
  __syncthreads();
  // Query positions of the block's rows and of this warp's rows (valid rows only).
  int qmin = posq[0], qmax = posq[0];
  for (int i = 1; i < nq; ++i) qmin = min(qmin, posq[i]), qmax = max(qmax, posq[i]);
  const int wrows = min(16, nq - 16 * wq);  // may be <= 0: the warp's rows are all padding
  int wqmin = posq[0], wqmax = posq[0];
  if (wrows > 0) {
    wqmin = wqmax = posq[16 * wq];
    for (int i = 1; i < wrows; ++i) wqmin = min(wqmin, posq[16 * wq + i]), wqmax = max(wqmax, posq[16 * wq + i]);
  }

  FragA<Tm> qf[kD / 16];  // this warp's 16 query rows, for the whole kernel
#pragma unroll
  for (int kk = 0; kk < kD / 16; ++kk) wmma::load_matrix_sync(qf[kk], qs + 16 * wq * kLdh + kk * 16, kLdh);
  FragC of[kD / 16];  // O of this warp's rows, unnormalised
#pragma unroll
  for (int n = 0; n < kD / 16; ++n) wmma::fill_fragment(of[n], 0.0f);
  // Softmax: lanes 2r and 2r+1 share row 16wq + r, keys [16*sh, 16*sh + 16) of each chunk.
  const int sr = lane >> 1, sh = lane & 1;
  const int si = 16 * wq + sr;
  float m_run = -INFINITY, l_run = 0.0f;

  for (int j0 = g * kBk; j0 < L; j0 += kWK * kBk) {
    const int nk = min(kBk, L - j0);
    group_sync<WQ>(g);  // the previous chunk's K, V, P and positions are no longer read
    stage<kD, kLdh, Tin, Tm>(ks, k + static_cast<size_t>(j0) * a.ld_qkv, a.ld_qkv, nk, kBk, tg, kGroupThreads);
    stage<kD, kLdh, Tin, Tm>(vs, v + static_cast<size_t>(j0) * a.ld_qkv, a.ld_qkv, nk, kBk, tg, kGroupThreads);
    if (tg < kBk) posk[tg] = tg < nk ? pos[j0 + tg] : pos[j0];
    group_sync<WQ>(g);
    int kmin = posk[0], kmax = posk[0];
    for (int j = 1; j < nk; ++j) kmin = min(kmin, posk[j]), kmax = max(kmax, posk[j]);
    // Key positions of the chunk's two 16-key tiles (a tile past nk: empty, kt_min > kt_max).
    int tmin[2], tmax[2];
#pragma unroll
    for (int kt = 0; kt < 2; ++kt) {
      tmin[kt] = INT_MAX, tmax[kt] = INT_MIN;
      for (int j = 16 * kt; j < min(16 * kt + 16, nk); ++j) tmin[kt] = min(tmin[kt], posk[j]), tmax[kt] = max(tmax[kt], posk[j]);
    }

    // Content term: this warp's 16 query rows x 32 keys.
#pragma unroll
    for (int n = 0; n < kBk / 16; ++n)
      mma_tile<kD, kLdh, Tm>(qf, ks + n * 16 * kLdh, ss + 16 * wq * kLdS + n * 16, kLdS);

    // Position terms, window by window over the relative rows this tile x chunk can index.
    const int rlo = clamp_rel(qmin - kmax + half, R), rhi = clamp_rel(qmax - kmin + half, R);
    for (int r0 = rlo; r0 <= rhi; r0 += kBr) {
      const int nr = min(kBr, rhi - r0 + 1), nr16 = (nr + 15) / 16 * 16;
      group_sync<WQ>(g);  // the previous window's tables are no longer read; scores are stored
      stage<kD, kLdh, Tin, Tm>(krs, k_rel + static_cast<size_t>(r0) * a.ld_rel, a.ld_rel, nr, nr16, tg, kGroupThreads);
      stage<kD, kLdh, Tin, Tm>(qrs, q_rel + static_cast<size_t>(r0) * a.ld_rel, a.ld_rel, nr, nr16, tg, kGroupThreads);
      group_sync<WQ>(g);
      // C2P of this warp's rows: only the window tiles they index.
      if (wrows > 0) {
        const int lo = clamp_rel(wqmin - kmax + half, R) - r0, hi = clamp_rel(wqmax - kmin + half, R) - r0;
        for (int t = max(lo, 0) / 16; t <= min(hi, nr - 1) / 16 && hi >= 0 && lo < nr; ++t)
          mma_tile<kD, kLdh, Tm>(qf, krs + t * 16 * kLdh, c2p + 16 * wq * kLdR + t * 16, kLdR);
      }
      // P2C of the chunk's key tiles: work items (key tile, window tile) dealt round the group's warps.
      int lo_t[2], n_t[2];
#pragma unroll
      for (int kt = 0; kt < 2; ++kt) {
        lo_t[kt] = 0, n_t[kt] = 0;
        if (tmin[kt] > tmax[kt]) continue;
        const int lo = clamp_rel(qmin - tmax[kt] + half, R) - r0, hi = clamp_rel(qmax - tmin[kt] + half, R) - r0;
        if (hi < 0 || lo >= nr) continue;
        lo_t[kt] = max(lo, 0) / 16;
        n_t[kt] = min(hi, nr - 1) / 16 - lo_t[kt] + 1;
      }
      for (int item = wq; item < n_t[0] + n_t[1]; item += WQ) {
        const int kt = item < n_t[0] ? 0 : 1, t = lo_t[kt] + (kt == 0 ? item : item - n_t[0]);
        FragA<Tm> kf[kD / 16];
#pragma unroll
        for (int kk = 0; kk < kD / 16; ++kk) wmma::load_matrix_sync(kf[kk], ks + 16 * kt * kLdh + kk * 16, kLdh);
        mma_tile<kD, kLdh, Tm>(kf, qrs + t * 16 * kLdh, p2c + 16 * kt * kLdR + t * 16, kLdR);
      }
      group_sync<WQ>(g);
      // Lane j gathers key column j for this warp's valid rows.
      if (lane < nk) {
        const int j = lane;
        for (int r = 0; r < wrows; ++r) {
          const int i = 16 * wq + r;
          const int rr = clamp_rel(posq[i] - posk[j] + half, R) - r0;
          if (rr >= 0 && rr < nr) ss[i * kLdS + j] += c2p[i * kLdR + rr] + p2c[j * kLdR + rr];
        }
      }
    }
    __syncwarp();

    // Online softmax over this chunk; P to shared memory, each row's rescale factor to the tile.
    {
      float sv[16];
      float mx = -INFINITY;
      const uint8_t* mrow = mask + static_cast<size_t>(i0 + min(si, nq - 1)) * L + j0 + 16 * sh;
#pragma unroll
      for (int c = 0; c < 16; ++c) {
        const int j = 16 * sh + c;
        const bool keep = si < nq && j < nk && mrow[c] != 0;
        sv[c] = keep ? ss[si * kLdS + j] * inv_scale : -INFINITY;
        mx = fmaxf(mx, sv[c]);
      }
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      const float m_new = fmaxf(m_run, mx);
      float sum = 0.0f;
#pragma unroll
      for (int c = 0; c < 16; ++c) {
        const float p = sv[c] == -INFINITY ? 0.0f : __expf(sv[c] - m_new);
        sum += p;
        ps[si * kLdP + 16 * sh + c] = cvt<Tm>(p);
      }
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      const float alpha = m_new == -INFINITY ? 1.0f : __expf(m_run - m_new);  // exp(-inf) = 0 on the first hit
      l_run = l_run * alpha + sum;
      m_run = m_new;
#pragma unroll
      for (int c = 0; c < 8; ++c) tile[sr * 16 + 8 * sh + c] = alpha;
    }
    __syncwarp();

    // O = O * alpha (per row) + P[16 x 32] · V[32 x kD].
    FragC alpha;
    wmma::load_matrix_sync(alpha, tile, 16, wmma::mem_row_major);
    FragA<Tm> pf[kBk / 16];
#pragma unroll
    for (int kk = 0; kk < kBk / 16; ++kk) wmma::load_matrix_sync(pf[kk], ps + 16 * wq * kLdP + kk * 16, kLdP);
#pragma unroll
    for (int n = 0; n < kD / 16; ++n) {
#pragma unroll
      for (int e = 0; e < of[n].num_elements; ++e) of[n].x[e] *= alpha.x[e];
#pragma unroll
      for (int kk = 0; kk < kBk / 16; ++kk) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, Tm, wmma::row_major> fb;
        wmma::load_matrix_sync(fb, vs + kk * 16 * kLdh + n * 16, kLdh);
        wmma::mma_sync(of[n], pf[kk], fb, of[n]);
      }
    }
  }

  // Merge the key groups: out_i = sum_g e^(m_g - M) O_g / sum_g e^(m_g - M) l_g, M = max_g m_g;
  // a fully masked row (no kept key in any group) is all zeros, as XSoftmax gives.
  __syncthreads();  // every group is done with its buffers
  float* mo = reinterpret_cast<float*>(smem + Lay::merge_o);
  float* ml = reinterpret_cast<float*>(smem + Lay::merge_ml);
#pragma unroll
  for (int n = 0; n < kD / 16; ++n)
    wmma::store_matrix_sync(mo + (g * kBq + 16 * wq) * kLdO + n * 16, of[n], kLdO, wmma::mem_row_major);
  if (sh == 0) ml[2 * (g * kBq + si)] = m_run, ml[2 * (g * kBq + si) + 1] = l_run;
  __syncthreads();
  Tin* out = static_cast<Tin*>(a.out) + static_cast<size_t>(row0 + i0) * a.ld_out + h * kD;
  for (int e = threadIdx.x; e < nq * kD; e += kThreads) {
    const int i = e / kD, c = e % kD;
    float M = -INFINITY;
#pragma unroll
    for (int gg = 0; gg < kWK; ++gg) M = fmaxf(M, ml[2 * (gg * kBq + i)]);
    float num = 0.0f, den = 0.0f;
    if (M != -INFINITY) {
#pragma unroll
      for (int gg = 0; gg < kWK; ++gg) {
        const float w = __expf(ml[2 * (gg * kBq + i)] - M);
        num += w * mo[(gg * kBq + i) * kLdO + c];
        den += w * ml[2 * (gg * kBq + i) + 1];
      }
    }
    out[static_cast<size_t>(i) * a.ld_out + c] = from_f32<Tin>(den > 0.0f ? num / den : 0.0f);
  }
#endif
}

template <typename Tin, typename Tm, int kD, int WQ>
void launch_d(const AttentionArgs& a, cudaStream_t stream) {
  const dim3 grid((a.batch.max_length + 16 * WQ - 1) / (16 * WQ), a.num_heads, a.batch.num_sequences);
  launch_with_smem(attention_mma_kernel<Tin, Tm, kD, WQ>, grid, kThreads, Layout<kD, WQ>::bytes, stream,
                   "cuda::disentangled_attention (mma)", a);
}

// head_dim 64 (the full-size model) and 16 (the tiny test model, so the GPU e2e tests run this kernel).
template <typename Tin, typename Tm>
void launch(const AttentionArgs& a, int key_groups, cudaStream_t stream) {
  if (key_groups == 0) {
    // attention_grid_is_small. Measured on the H200 (132 SMs, docs/benchmarks.md, CUDA stage 4):
    // L=128 B=1 (24 blocks of 64 rows) 25 us split against 52; L=512 B=1 (96 blocks) 167 us with
    // 64 rows against 186 split.
    DeviceLimits d;
    key_groups = query_device_limits(d) && attention_grid_is_small(a, d.sms) ? 4 : 1;
  }
  if (a.head_dim == 64) {
    if (key_groups == 1) launch_d<Tin, Tm, 64, 4>(a, stream);
    else launch_d<Tin, Tm, 64, 1>(a, stream);
  } else {
    if (key_groups == 1) launch_d<Tin, Tm, 16, 4>(a, stream);
    else launch_d<Tin, Tm, 16, 1>(a, stream);
  }
}

}  // namespace

bool attention_grid_is_small(const AttentionArgs& a, int sms) {
  const long blocks64 = static_cast<long>((a.batch.max_length + 63) / 64) * a.num_heads * a.batch.num_sequences;
  return 2 * blocks64 < sms;
}

bool attention_mma_supported(const AttentionArgs& a) {
  if ((a.head_dim != 64 && a.head_dim != 16) || (a.compute != DType::kF16 && a.compute != DType::kBF16)) return false;
  if (a.type != DType::kF32 && a.type != a.compute) return false;
  DeviceLimits d;
  return query_device_limits(d) && d.major >= 8 && d.smem_optin >= Layout<64, 1>::bytes &&
         d.smem_optin >= Layout<64, 4>::bytes;
}

void disentangled_attention_mma(const AttentionArgs& a, cudaStream_t stream, int key_groups) {
  if (key_groups != 0 && key_groups != 1 && key_groups != 4)
    throw InternalError("cuda::disentangled_attention (mma): key_groups must be 0 (by grid size), 1 or 4");
  if (a.compute == DType::kF16) {
    if (a.type == DType::kF32) launch<float, __half>(a, key_groups, stream);
    else launch<__half, __half>(a, key_groups, stream);
  } else {
    if (a.type == DType::kF32) launch<float, __nv_bfloat16>(a, key_groups, stream);
    else launch<__nv_bfloat16, __nv_bfloat16>(a, key_groups, stream);
  }
}

}  // namespace rexnlu::backends::cuda
