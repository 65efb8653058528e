// Tensor-core (WMMA, sm_80+) fused disentangled attention, flash style, for head_dim 64 and
// fp16/bf16 arithmetic (semantics: attention.cu and the CPU kernel):
//   S[i,j] = (Q_i·K_j + Q_i·Kr[idx] + K_j·Qr[idx]) / s,  idx = clamp(pos_i - pos_j + rel_rows/2, 0, rel_rows-1)
//   P = XSoftmax(S, mask);  out_i = sum_j P[i,j] V_j
// One block = one sequence, one head, 32 query rows (2 warps, 16 rows each). For every chunk
// of 32 keys: S = Q·K^T on the tensor cores; then for each window of 64 relative rows that the
// tile x chunk can index (one window when positions run contiguously), C2P = Q·Kr_win^T and
// P2C = K·Qr_win^T on the tensor cores and each pair gathers its two terms from them; then an
// online softmax (running max and sum per row, fp32) and O += P·V on the tensor cores, O kept
// in shared memory in fp32. Inputs may be stored in fp32 (rounded to the arithmetic type when
// staged) or in the arithmetic type; products accumulate in fp32; P is rounded to the
// arithmetic type for P·V (as flash attention does).
#include <mma.h>

#include "backends/cuda/attention_mma.h"
#include "backends/cuda/types.cuh"
#include "rexnlu/error.h"

namespace rexnlu::backends::cuda {

namespace {

constexpr int kBq = 32;       // query rows per block
constexpr int kBk = 32;       // keys per chunk
constexpr int kBr = 64;       // relative rows per window
constexpr int kThreads = 64;  // 2 warps
constexpr int kLdS = kBk + 4;
constexpr int kLdR = kBr + 4;
constexpr int kLdP = kBk + 8;

// Shared-memory layout in bytes for head_dim kD (every piece a multiple of 32 bytes: WMMA needs
// 256-bit aligned tiles). Pitches: kD + 8 16-bit values (rows 16 bytes apart in the banks),
// kD + 4 floats.
template <int kD>
struct Layout {
  static constexpr int kLdh = kD + 8;
  static constexpr int kLdO = kD + 4;
  static constexpr int q = 0;
  static constexpr int k = q + kBq * kLdh * 2;
  static constexpr int v = k + kBk * kLdh * 2;
  static constexpr int kr = v + kBk * kLdh * 2;
  static constexpr int qr = kr + kBr * kLdh * 2;
  static constexpr int s = qr + kBr * kLdh * 2;
  static constexpr int c2p = s + kBq * kLdS * 4;
  static constexpr int p2c = c2p + kBq * kLdR * 4;
  static constexpr int o = p2c + kBk * kLdR * 4;
  static constexpr int p = o + kBq * kLdO * 4;
  static constexpr int pos = p + kBq * kLdP * 2;
  static constexpr int bytes = pos + (kBq + kBk) * 4;
};

template <typename Tm> __device__ __forceinline__ Tm cvt(float x) { return from_f32<Tm>(x); }

// rows [0, rows) of kD values of Tin -> Tm rows of pitch kLdh; rows [rows, pad_rows) zero.
template <int kD, typename Tin, typename Tm>
__device__ __forceinline__ void stage(Tm* dst, const Tin* src, size_t ld, int rows, int pad_rows) {
  constexpr int kVec = 16 / sizeof(Tin);
  constexpr int kChunks = kD / kVec;
  constexpr int kLdh = Layout<kD>::kLdh;
  for (int e = threadIdx.x; e < pad_rows * kChunks; e += kThreads) {
    const int r = e / kChunks, c = (e % kChunks) * kVec;
    Tm* d = dst + r * kLdh + c;
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

using namespace nvcuda;

// C[16 x 16*N] (fp32, pitch ldc) = A[16 x kD] (row-major, pitch kLdh) · B^T where B holds 16*N
// rows of kD (pitch kLdh): the "x · y^T" products of this kernel, one warp.
template <int kD, typename Tm, int N>
__device__ __forceinline__ void mma_abt(const Tm* a, const Tm* b, float* c, int ldc) {
  constexpr int kLdh = Layout<kD>::kLdh;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[N];
#pragma unroll
  for (int n = 0; n < N; ++n) wmma::fill_fragment(acc[n], 0.0f);
#pragma unroll
  for (int kk = 0; kk < kD; kk += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, Tm, wmma::row_major> fa;
    wmma::load_matrix_sync(fa, a + kk, kLdh);
#pragma unroll
    for (int n = 0; n < N; ++n) {
      wmma::fragment<wmma::matrix_b, 16, 16, 16, Tm, wmma::col_major> fb;  // B^T: column-major view of B's rows
      wmma::load_matrix_sync(fb, b + n * 16 * kLdh + kk, kLdh);
      wmma::mma_sync(acc[n], fa, fb, acc[n]);
    }
  }
#pragma unroll
  for (int n = 0; n < N; ++n) wmma::store_matrix_sync(c + n * 16, acc[n], ldc, wmma::mem_row_major);
}

template <typename Tin, typename Tm, int kD>
__global__ void __launch_bounds__(kThreads) attention_mma_kernel(AttentionArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using Lay = Layout<kD>;
  constexpr int kLdh = Lay::kLdh, kLdO = Lay::kLdO;
  extern __shared__ __align__(128) unsigned char smem[];
  Tm* qs = reinterpret_cast<Tm*>(smem + Lay::q);
  Tm* ks = reinterpret_cast<Tm*>(smem + Lay::k);
  Tm* vs = reinterpret_cast<Tm*>(smem + Lay::v);
  Tm* krs = reinterpret_cast<Tm*>(smem + Lay::kr);
  Tm* qrs = reinterpret_cast<Tm*>(smem + Lay::qr);
  float* ss = reinterpret_cast<float*>(smem + Lay::s);
  float* c2p = reinterpret_cast<float*>(smem + Lay::c2p);
  float* p2c = reinterpret_cast<float*>(smem + Lay::p2c);
  float* os = reinterpret_cast<float*>(smem + Lay::o);
  Tm* ps = reinterpret_cast<Tm*>(smem + Lay::p);
  int* posq = reinterpret_cast<int*>(smem + Lay::pos);
  int* posk = posq + kBq;

  const int b = blockIdx.z, h = blockIdx.y, i0 = blockIdx.x * kBq;
  const int row0 = a.batch.offsets[b];
  const int L = a.batch.offsets[b + 1] - row0;
  if (i0 >= L) return;
  const int nq = min(kBq, L - i0);
  const int half = a.rel_rows / 2;
  const float inv_scale = 1.0f / a.scale;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

  const Tin* q = static_cast<const Tin*>(a.q) + static_cast<size_t>(row0) * a.ld_qkv + h * kD;
  const Tin* k = static_cast<const Tin*>(a.k) + static_cast<size_t>(row0) * a.ld_qkv + h * kD;
  const Tin* v = static_cast<const Tin*>(a.v) + static_cast<size_t>(row0) * a.ld_qkv + h * kD;
  const Tin* q_rel = static_cast<const Tin*>(a.q_rel) + h * kD;
  const Tin* k_rel = static_cast<const Tin*>(a.k_rel) + h * kD;
  const int32_t* pos = a.batch.position_ids + row0;
  const uint8_t* mask = a.batch.masks + a.batch.mask_offsets[b];

  stage<kD, Tin, Tm>(qs, q + static_cast<size_t>(i0) * a.ld_qkv, a.ld_qkv, nq, kBq);
  if (threadIdx.x < kBq) posq[threadIdx.x] = threadIdx.x < nq ? pos[i0 + threadIdx.x] : pos[i0];
  for (int e = threadIdx.x; e < kBq * kLdO; e += kThreads) os[e] = 0.0f;
  __syncthreads();
  int qmin = posq[0], qmax = posq[0];
  for (int i = 1; i < nq; ++i) qmin = min(qmin, posq[i]), qmax = max(qmax, posq[i]);

  // Running max and sum of this warp's 16 rows (every lane holds all 16).
  float m_run[16], l_run[16];
#pragma unroll
  for (int r = 0; r < 16; ++r) m_run[r] = -INFINITY, l_run[r] = 0.0f;

  for (int j0 = 0; j0 < L; j0 += kBk) {
    const int nk = min(kBk, L - j0);
    __syncthreads();  // the previous chunk's K, V, P and scores are no longer read
    stage<kD, Tin, Tm>(ks, k + static_cast<size_t>(j0) * a.ld_qkv, a.ld_qkv, nk, kBk);
    stage<kD, Tin, Tm>(vs, v + static_cast<size_t>(j0) * a.ld_qkv, a.ld_qkv, nk, kBk);
    if (threadIdx.x < kBk) posk[threadIdx.x] = threadIdx.x < nk ? pos[j0 + threadIdx.x] : pos[j0];
    __syncthreads();
    int kmin = posk[0], kmax = posk[0];
    for (int j = 1; j < nk; ++j) kmin = min(kmin, posk[j]), kmax = max(kmax, posk[j]);

    // Content term: this warp's 16 query rows x 32 keys.
    mma_abt<kD, Tm, kBk / 16>(qs + warp * 16 * kLdh, ks, ss + warp * 16 * kLdS, kLdS);

    // Position terms, window by window over the relative rows this tile x chunk can index.
    const int rlo = min(max(qmin - kmax + half, 0), a.rel_rows - 1);
    const int rhi = min(max(qmax - kmin + half, 0), a.rel_rows - 1);
    for (int r0 = rlo; r0 <= rhi; r0 += kBr) {
      const int nr = min(kBr, rhi - r0 + 1);
      __syncthreads();  // previous window's tables are no longer read; scores are stored
      stage<kD, Tin, Tm>(krs, k_rel + static_cast<size_t>(r0) * a.ld_rel, a.ld_rel, nr, kBr);
      stage<kD, Tin, Tm>(qrs, q_rel + static_cast<size_t>(r0) * a.ld_rel, a.ld_rel, nr, kBr);
      __syncthreads();
      mma_abt<kD, Tm, kBr / 16>(qs + warp * 16 * kLdh, krs, c2p + warp * 16 * kLdR, kLdR);
      mma_abt<kD, Tm, kBr / 16>(ks + warp * 16 * kLdh, qrs, p2c + warp * 16 * kLdR, kLdR);
      __syncthreads();
      // Thread t gathers key column j = lane for its warp's 16 rows.
#pragma unroll 4
      for (int r = 0; r < 16; ++r) {
        const int i = warp * 16 + r, j = lane;
        const int rr = min(max(posq[i] - posk[j] + half, 0), a.rel_rows - 1) - r0;
        if (rr >= 0 && rr < nr) ss[i * kLdS + j] += c2p[i * kLdR + rr] + p2c[j * kLdR + rr];
      }
    }
    __syncwarp();

    // Online softmax over this chunk, lane = key column; P to shared memory, O rows rescaled.
#pragma unroll
    for (int r = 0; r < 16; ++r) {
      const int i = warp * 16 + r, j = lane;
      const bool keep = i < nq && j < nk && mask[static_cast<size_t>(i0 + i) * L + j0 + j] != 0;
      const float s = keep ? ss[i * kLdS + j] * inv_scale : -INFINITY;
      float mx = s;
      for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
      const float m_new = fmaxf(m_run[r], mx);
      const float p = keep ? __expf(s - m_new) : 0.0f;
      float sum = p;
      for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
      const float alpha = m_new == -INFINITY ? 1.0f : __expf(m_run[r] - m_new);  // exp(-inf) = 0 on the first hit
      l_run[r] = l_run[r] * alpha + sum;
      m_run[r] = m_new;
      ps[i * kLdP + j] = cvt<Tm>(p);
#pragma unroll
      for (int c = lane; c < kD; c += 32) os[i * kLdO + c] *= alpha;
    }
    __syncwarp();

    // O[16 rows x 64] += P[16 x 32] · V[32 x 64].
#pragma unroll
    for (int n = 0; n < kD / 16; ++n) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      float* o_tile = os + warp * 16 * kLdO + n * 16;
      wmma::load_matrix_sync(acc, o_tile, kLdO, wmma::mem_row_major);
#pragma unroll
      for (int kk = 0; kk < kBk; kk += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, Tm, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, Tm, wmma::row_major> fb;
        wmma::load_matrix_sync(fa, ps + warp * 16 * kLdP + kk, kLdP);
        wmma::load_matrix_sync(fb, vs + kk * kLdh + n * 16, kLdh);
        wmma::mma_sync(acc, fa, fb, acc);
      }
      wmma::store_matrix_sync(o_tile, acc, kLdO, wmma::mem_row_major);
    }
  }
  __syncwarp();

  // out = O / l; a fully masked row (l = 0) is all zeros, as XSoftmax gives.
  Tin* out = static_cast<Tin*>(a.out) + static_cast<size_t>(row0 + i0) * a.ld_out + h * kD;
#pragma unroll
  for (int r = 0; r < 16; ++r) {
    const int i = warp * 16 + r;
    if (i >= nq) break;
    const float inv = l_run[r] > 0.0f ? 1.0f / l_run[r] : 0.0f;
    Tin* o = out + static_cast<size_t>(i) * a.ld_out;
#pragma unroll
    for (int c = lane; c < kD; c += 32) o[c] = from_f32<Tin>(os[i * kLdO + c] * inv);
  }
#endif
}

template <typename Tin, typename Tm, int kD>
void launch_d(const AttentionArgs& a, cudaStream_t stream) {
  constexpr int bytes = Layout<kD>::bytes;
  check(cudaFuncSetAttribute(attention_mma_kernel<Tin, Tm, kD>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes),
        "cuda::disentangled_attention (mma) smem");
  const dim3 grid((a.batch.max_length + kBq - 1) / kBq, a.num_heads, a.batch.num_sequences);
  attention_mma_kernel<Tin, Tm, kD><<<grid, kThreads, bytes, stream>>>(a);
  check_launch("cuda::disentangled_attention (mma)");
}

// head_dim 64 (the full-size model) and 16 (the tiny test model, so the GPU e2e tests run this kernel).
template <typename Tin, typename Tm>
void launch(const AttentionArgs& a, cudaStream_t stream) {
  if (a.head_dim == 64) launch_d<Tin, Tm, 64>(a, stream);
  else launch_d<Tin, Tm, 16>(a, stream);
}

}  // namespace

bool attention_mma_supported(const AttentionArgs& a) {
  if ((a.head_dim != 64 && a.head_dim != 16) || (a.compute != DType::kF16 && a.compute != DType::kBF16)) return false;
  if (a.type != DType::kF32 && a.type != a.compute) return false;
  int device = 0, major = 0, limit = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess) return false;
  return major >= 8 && limit >= Layout<64>::bytes;
}

void disentangled_attention_mma(const AttentionArgs& a, cudaStream_t stream) {
  if (a.compute == DType::kF16) {
    if (a.type == DType::kF32) launch<float, __half>(a, stream);
    else launch<__half, __half>(a, stream);
  } else {
    if (a.type == DType::kF32) launch<float, __nv_bfloat16>(a, stream);
    else launch<__nv_bfloat16, __nv_bfloat16>(a, stream);
  }
}

}  // namespace rexnlu::backends::cuda
