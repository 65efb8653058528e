// Fused DeBERTa-v2 disentangled attention over a packed batch (semantics: the CPU kernel in
// src/kernels/cpu/disentangled_attention.cpp, spec section 3):
//   S[i,j] = Q_i·K_j/s + (Q_i·Kr[idx] + K_j·Qr[idx])/s,  idx = clamp(pos_i - pos_j + rel_rows/2, 0, rel_rows-1)
//   P = XSoftmax(S, mask);  out_i = sum_j P[i,j] V_j
// One block = one sequence, one head, kBq query rows. It walks the keys in chunks of kBk; for
// each chunk only the relative rows [idx_min, idx_max] that (query tile x key chunk) can index
// are staged in shared memory, kBr at a time (one step when positions run contiguously), and
// each (i, j) pair gathers its own Kr/Qr row there: two extra dot products per pair, no
// c2p/p2c matrix anywhere. The score rows stay in shared memory (kBq x L) until the softmax
// and P·V. fp32 arithmetic throughout (CUDA cores).
#include <string>

#include "backends/cuda/attention_fa.h"
#include "backends/cuda/attention_mma.h"
#include "backends/cuda/ops.h"
#include "backends/cuda/types.cuh"
#include "rexnlu/error.h"

namespace rexnlu::backends::cuda {

namespace {

constexpr int kBk = 32;       // keys per chunk
constexpr int kBr = 64;       // relative-embedding rows per step
constexpr int kThreads = 128;

// kBq = query rows per block: 16 where the grid still fills the GPU twice over, else 8.
template <int kBq, int D>
struct Smem {
  // Row pitch: a multiple of 4 floats (float4 reads) skewed by 4, so that the 8 lanes of a
  // quarter-warp reading 8 different rows with float4 hit 8 different bank groups.
  static constexpr int P = D + 4;
  // floats: Q tile, K (or V) chunk, Kr and Qr steps; then kBq x L scores
  static constexpr int fixed = kBq * D + kBk * P + 2 * kBr * P;
  static size_t bytes(int max_length) {
    const int lpad = (max_length + kBk - 1) / kBk * kBk;
    return sizeof(float) * (static_cast<size_t>(fixed) + static_cast<size_t>(kBq) * lpad) + sizeof(int) * (kBq + kBk);
  }
};

__device__ __forceinline__ float dot4(float4 a, float4 b, float acc) {
  return fmaf(a.w, b.w, fmaf(a.z, b.z, fmaf(a.y, b.y, fmaf(a.x, b.x, acc))));
}

// Rows [0, rows) of D values (16-byte loads; launch() checks the alignment) to fp32 rows of
// `pitch` floats in shared memory.
template <typename T, int D>
__device__ __forceinline__ void load_rows(float* dst, int pitch, const T* src, size_t ld, int rows) {
  constexpr int kVec = 16 / sizeof(T);
  constexpr int kChunks = D / kVec;
  for (int e = threadIdx.x; e < rows * kChunks; e += kThreads) {
    const int r = e / kChunks, c = (e % kChunks) * kVec;
    const uint4 raw = *reinterpret_cast<const uint4*>(src + r * ld + c);
    const T* v = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int u = 0; u < kVec; ++u) dst[r * pitch + c + u] = to_f32(v[u]);
  }
}

template <typename T, int kBq, int D>
__global__ void __launch_bounds__(kThreads) attention_kernel(AttentionArgs a) {
  pdl_begin();
  using S = Smem<kBq, D>;
  constexpr int P = S::P;
  const int b = blockIdx.z, h = blockIdx.y, i0 = blockIdx.x * kBq;
  const int row0 = a.batch.offsets[b];
  const int L = a.batch.offsets[b + 1] - row0;
  if (i0 >= L) return;
  const int nq = min(kBq, L - i0);
  const int lpad = (a.batch.max_length + kBk - 1) / kBk * kBk;
  const int half = a.rel_rows / 2;
  const float inv_scale = 1.0f / a.scale;

  extern __shared__ float smem[];
  float* qs = smem;              // [kBq][D]
  float* ks = qs + kBq * D;      // [kBk][P], K chunk, later V chunk
  float* krs = ks + kBk * P;     // [kBr][P]
  float* qrs = krs + kBr * P;    // [kBr][P]
  float* sc = qrs + kBr * P;     // [kBq][lpad] scores, then probabilities
  int* posq = reinterpret_cast<int*>(sc + kBq * lpad);
  int* posk = posq + kBq;

  const T* q = static_cast<const T*>(a.q) + static_cast<size_t>(row0) * a.ld_qkv + h * D;
  const T* k = static_cast<const T*>(a.k) + static_cast<size_t>(row0) * a.ld_qkv + h * D;
  const T* v = static_cast<const T*>(a.v) + static_cast<size_t>(row0) * a.ld_qkv + h * D;
  const T* q_rel = static_cast<const T*>(a.q_rel) + h * D;
  const T* k_rel = static_cast<const T*>(a.k_rel) + h * D;
  const int32_t* pos = a.batch.position_ids + row0;
  const uint8_t* mask = a.batch.masks + a.batch.mask_offsets[b];

  for (int e = threadIdx.x; e < kBq * D; e += kThreads) qs[e] = 0.0f;  // rows past nq stay finite
  __syncthreads();
  load_rows<T, D>(qs, D, q + static_cast<size_t>(i0) * a.ld_qkv, a.ld_qkv, nq);
  if (threadIdx.x < kBq) posq[threadIdx.x] = threadIdx.x < nq ? pos[i0 + threadIdx.x] : pos[i0];
  __syncthreads();
  int qmin = posq[0], qmax = posq[0];
  for (int i = 1; i < nq; ++i) qmin = min(qmin, posq[i]), qmax = max(qmax, posq[i]);

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;  // 4 warps
  for (int j0 = 0; j0 < L; j0 += kBk) {
    const int nk = min(kBk, L - j0);
    __syncthreads();  // previous chunk's ks/posk no longer read
    load_rows<T, D>(ks, P, k + static_cast<size_t>(j0) * a.ld_qkv, a.ld_qkv, nk);
    if (threadIdx.x < kBk) posk[threadIdx.x] = threadIdx.x < nk ? pos[j0 + threadIdx.x] : pos[j0];
    __syncthreads();
    int kmin = posk[0], kmax = posk[0];
    for (int j = 1; j < nk; ++j) kmin = min(kmin, posk[j]), kmax = max(kmax, posk[j]);

    // Content term; thread owns pairs (i = warp + 4u, j = lane), u < kBq/4. Key rows past nk
    // hold stale values: their scores are never stored.
    // Each K value read from shared memory serves all kBq/4 queries of the thread.
    constexpr int U = kBq / 4;
    float s[U] = {};
    int idx[U];
    const float4* kj4 = reinterpret_cast<const float4*>(ks + lane * P);
#pragma unroll 4
    for (int d4 = 0; d4 < D / 4; ++d4) {
      const float4 kv = kj4[d4];
#pragma unroll
      for (int u = 0; u < U; ++u) s[u] = dot4(reinterpret_cast<const float4*>(qs + (warp + 4 * u) * D)[d4], kv, s[u]);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      s[u] *= inv_scale;
      idx[u] = min(max(posq[warp + 4 * u] - posk[lane] + half, 0), a.rel_rows - 1);
    }
    // Position terms: only the relative rows this tile x chunk can index.
    const int rlo = min(max(qmin - kmax + half, 0), a.rel_rows - 1);
    const int rhi = min(max(qmax - kmin + half, 0), a.rel_rows - 1);
    for (int r0 = rlo; r0 <= rhi; r0 += kBr) {
      const int nr = min(kBr, rhi - r0 + 1);
      __syncthreads();  // previous step's krs/qrs no longer read
      load_rows<T, D>(krs, P, k_rel + static_cast<size_t>(r0) * a.ld_rel, a.ld_rel, nr);
      load_rows<T, D>(qrs, P, q_rel + static_cast<size_t>(r0) * a.ld_rel, a.ld_rel, nr);
      __syncthreads();
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int rr = idx[u] - r0;
        if (rr < 0 || rr >= nr) continue;
        const float4* qi = reinterpret_cast<const float4*>(qs + (warp + 4 * u) * D);
        const float4* kr = reinterpret_cast<const float4*>(krs + rr * P);
        const float4* qr = reinterpret_cast<const float4*>(qrs + rr * P);
        float c2p = 0.0f, p2c = 0.0f;
#pragma unroll 4
        for (int d4 = 0; d4 < D / 4; ++d4) {
          c2p = dot4(qi[d4], kr[d4], c2p);
          p2c = dot4(kj4[d4], qr[d4], p2c);
        }
        s[u] += (c2p + p2c) * inv_scale;
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (lane < nk) sc[(warp + 4 * u) * lpad + j0 + lane] = s[u];
  }
  __syncthreads();

  // XSoftmax per row: warp w takes rows w and w + 4.
  for (int i = warp; i < nq; i += 4) {
    float* srow = sc + i * lpad;
    const uint8_t* m = mask + static_cast<size_t>(i0 + i) * L;
    float mx = -INFINITY;
    for (int j = lane; j < L; j += 32)
      if (m[j]) mx = fmaxf(mx, srow[j]);
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    float sum = 0.0f;
    for (int j = lane; j < L; j += 32) {
      const float p = (m[j] && mx != -INFINITY) ? expf(srow[j] - mx) : 0.0f;
      srow[j] = p;
      sum += p;
    }
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;  // fully masked row stays all zeros
    for (int j = lane; j < L; j += 32) srow[j] *= inv;
  }

  // out_i = P_i · V: thread owns 4 adjacent columns (c4) of rows r_base + kRowsPerPass*u, so
  // each V value read serves all of its rows.
  constexpr int kCols = D / 4;
  constexpr int kRowsPerPass = kThreads / kCols;
  constexpr int kRowIters = (kBq + kRowsPerPass - 1) / kRowsPerPass;
  const int c4 = threadIdx.x % kCols, r_base = threadIdx.x / kCols;
  float4 acc[kRowIters];
#pragma unroll
  for (int u = 0; u < kRowIters; ++u) acc[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (int j0 = 0; j0 < L; j0 += kBk) {
    const int nk = min(kBk, L - j0);
    __syncthreads();
    load_rows<T, D>(ks, P, v + static_cast<size_t>(j0) * a.ld_qkv, a.ld_qkv, nk);
    __syncthreads();
    for (int j = 0; j < nk; ++j) {
      const float4 vv = reinterpret_cast<const float4*>(ks + j * P)[c4];
#pragma unroll
      for (int u = 0; u < kRowIters; ++u) {
        const int i = r_base + kRowsPerPass * u;
        if (kRowsPerPass * kRowIters > kBq && i >= kBq) break;
        const float p = sc[i * lpad + j0 + j];
        acc[u].x = fmaf(p, vv.x, acc[u].x);
        acc[u].y = fmaf(p, vv.y, acc[u].y);
        acc[u].z = fmaf(p, vv.z, acc[u].z);
        acc[u].w = fmaf(p, vv.w, acc[u].w);
      }
    }
  }
  T* out = static_cast<T*>(a.out) + static_cast<size_t>(row0 + i0) * a.ld_out + h * D + 4 * c4;
#pragma unroll
  for (int u = 0; u < kRowIters; ++u) {
    const int i = r_base + kRowsPerPass * u;
    if (i >= nq) break;
    T* o = out + static_cast<size_t>(i) * a.ld_out;
    o[0] = from_f32<T>(acc[u].x);
    o[1] = from_f32<T>(acc[u].y);
    o[2] = from_f32<T>(acc[u].z);
    o[3] = from_f32<T>(acc[u].w);
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <typename T, int kBq, int D>
void launch_tile(const AttentionArgs& a, size_t smem, cudaStream_t stream) {
  const dim3 grid((a.batch.max_length + kBq - 1) / kBq, a.num_heads, a.batch.num_sequences);
  launch_with_smem(attention_kernel<T, kBq, D>, grid, kThreads, smem, stream, "cuda::disentangled_attention", a);
}

template <typename T, int D>
void launch(const AttentionArgs& a, cudaStream_t stream) {
  const size_t row_bytes_qkv = static_cast<size_t>(a.ld_qkv) * sizeof(T), row_bytes_rel = static_cast<size_t>(a.ld_rel) * sizeof(T);
  if (!aligned16(a.q) || !aligned16(a.k) || !aligned16(a.v) || !aligned16(a.q_rel) || !aligned16(a.k_rel) ||
      row_bytes_qkv % 16 != 0 || row_bytes_rel % 16 != 0)
    throw InternalError("cuda::disentangled_attention: q, k, v, q_rel, k_rel and their row strides must be 16-byte aligned");
  const DeviceLimits d = device_limits("cuda::disentangled_attention");
  const int limit = d.smem_optin, sms = d.sms;
  if (attention_uses_tensor_cores(a)) {
    if (a.tc_kernel == TensorCoreKernel::kFlash && attention_fa_supported(a)) disentangled_attention_fa(a, stream);
    else disentangled_attention_mma(a, stream);
    return;
  }
  const long blocks16 = static_cast<long>((a.batch.max_length + 15) / 16) * a.num_heads * a.batch.num_sequences;
  const size_t smem16 = Smem<16, D>::bytes(a.batch.max_length), smem8 = Smem<8, D>::bytes(a.batch.max_length);
  if (smem16 <= static_cast<size_t>(limit) && blocks16 >= 2L * sms) {
    launch_tile<T, 16, D>(a, smem16, stream);
  } else if (smem8 <= static_cast<size_t>(limit)) {
    launch_tile<T, 8, D>(a, smem8, stream);
  } else {
    throw InternalError("cuda::disentangled_attention: sequences of " + std::to_string(a.batch.max_length) +
                        " tokens need " + std::to_string(smem8) + " bytes of shared memory, the device has " +
                        std::to_string(limit));
  }
}

}  // namespace

bool attention_uses_tensor_cores(const AttentionArgs& a) {
  if (a.compute == DType::kF32 || a.tensor_cores == 0 || a.batch.num_sequences <= 0) return false;
  DeviceLimits d;
  if (!query_device_limits(d)) return false;
  // The tensor-core kernels (attention_fa.cu, attention_mma.cu) in fp16 and bf16 at every grid
  // size. Until session 11 bf16 kept the fp32-math kernel on small grids because the tiny random
  // model's e2e cases missed one more decisive case with it; those cases' margins (<= 0.074) are
  // below what bf16 weights alone move that model's logits (0.2), so they no longer decide bf16
  // (tests/uie/test_parity.cpp), the demo model's precision tests do.
  return attention_mma_supported(a);
}

void disentangled_attention(const AttentionArgs& a, cudaStream_t stream) {
  if (a.batch.num_sequences <= 0) return;
  if (a.rel_rows <= 0) throw InternalError("cuda::disentangled_attention: rel_rows must be > 0");
  dispatch_float_type(a.type, "cuda::disentangled_attention", [&](auto tag) {
    using T = decltype(tag);
    switch (a.head_dim) {
      case 16: launch<T, 16>(a, stream); break;
      case 32: launch<T, 32>(a, stream); break;
      case 64: launch<T, 64>(a, stream); break;
      case 128: launch<T, 128>(a, stream); break;
      default:
        throw InternalError("cuda::disentangled_attention: head_dim " + std::to_string(a.head_dim) +
                            " (supported: 16, 32, 64, 128)");
    }
  });
}

}  // namespace rexnlu::backends::cuda
