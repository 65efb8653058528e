// The link head's token-pair scores Z = q · k^T per sequence (fp32), thresholded on the device
// so that only the links decoding reads are copied back.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cuda/ops.h"
#include "backends/cuda/types.cuh"
#include "rexnlu/error.h"

namespace rexnlu::backends::cuda {

namespace {

// One block of 256 threads computes a kTile x kTile tile of Z; its threads form kGroups groups
// of (kTile/4)^2, each thread holding 4 x 4 outputs. The q and k rows of the tile pass through
// shared memory kDepth dims per stage (16 floats per thread, loaded during the previous stage's
// products); group g takes the g-th slice of kSlice dims of every stage, and at the end the
// groups' partial sums are added in the fixed order g = 0, 1, ... (deterministic). Small tiles
// with many groups give a small grid (batch 1, L = 128) many blocks and short dependency chains;
// large tiles reuse more (4 x 4 outputs per two 16-byte shared-memory reads in every config).
constexpr int kThreads = 256;

template <int kTile, int kGroups>
struct Config {
  static constexpr int kSide = kTile / 4;           // threads of a group along i and along j
  static constexpr int kDepth = 2048 / kTile;       // dims per stage: 2 x kTile x kDepth = 16 floats a thread
  static constexpr int kSlice = kDepth / kGroups;   // dims per group and stage
  static constexpr int kPitch = kTile + 4;          // floats per dim in shared memory (16-byte rows)
  static constexpr int kStage = 2 * kDepth * kPitch;  // q then k, [dim][row]
  static constexpr int kLoads = 2 * kTile * kDepth / 4 / kThreads;  // float4 loads per thread and stage
  static_assert(kSide * kSide * kGroups == kThreads && kSlice * kGroups == kDepth && kLoads == 4 && kDepth % 8 == 0);
  static_assert(kGroups * kTile * kTile <= kStage, "the partial sums reuse the stage's shared memory");
};

// The 4 floats at dims d, d+1, d+2, d+3 of `row` (zeros at and past dim). vec: 16-byte loads
// (row 16-byte aligned and dim a multiple of 4, checked by link_scores()).
__device__ __forceinline__ float4 load4(const float* row, int d, int dim, bool vec) {
  if (vec) return d < dim ? *reinterpret_cast<const float4*>(row + d) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  return make_float4(d < dim ? row[d] : 0.0f, d + 1 < dim ? row[d + 1] : 0.0f, d + 2 < dim ? row[d + 2] : 0.0f,
                     d + 3 < dim ? row[d + 3] : 0.0f);
}

template <int kTile, int kGroups>
__global__ void __launch_bounds__(kThreads) link_scores_kernel(LinkScoresArgs a, bool vec) {
  pdl_begin();
  using C = Config<kTile, kGroups>;
  const int b = blockIdx.z;
  const int row0 = a.batch.offsets[b];
  const int L = a.batch.offsets[b + 1] - row0;
  const int i0 = blockIdx.y * kTile, j0 = blockIdx.x * kTile;
  if (i0 >= L || j0 >= L) return;  // the whole block
  __shared__ __align__(16) float smem[C::kStage];
  float* qs = smem;                       // [kDepth][kPitch]: q rows i0.. of the stage's dims
  float* ks = smem + C::kDepth * C::kPitch;  // k rows j0..
  const int g = static_cast<int>(threadIdx.x) / (C::kSide * C::kSide);
  const int tx = static_cast<int>(threadIdx.x) % C::kSide, ty = static_cast<int>(threadIdx.x) / C::kSide % C::kSide;

  // Stage loads: pre[0..1] from q, pre[2..3] from k. Float4 number e of a matrix's stage: row
  // e / 2 % kTile, dims c = e / 2 / kTile * 8 + e % 2 * 4: two threads read a row's 32-byte
  // sector, and the next pairs the next rows, so that the transposed stores below (dim-major)
  // hit 32 different banks (threads reading along a row would put 16 on one bank).
  float4 pre[C::kLoads];
  const auto row_of = [](int e) { return e / 2 % kTile; };
  const auto dim_of = [](int e) { return e / 2 / kTile * 8 + e % 2 * 4; };
  const auto load_stage = [&](int d0) {
#pragma unroll
    for (int u = 0; u < C::kLoads; ++u) {
      const int m = u / 2, e = static_cast<int>(threadIdx.x) + kThreads * (u % 2);
      const int r = row_of(e), c = dim_of(e);
      const int t = (m == 0 ? i0 : j0) + r;
      pre[u] = t < L ? load4((m == 0 ? a.q : a.k) + static_cast<size_t>(row0 + t) * a.ld, d0 + c, a.dim, vec)
                     : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
  };
  float acc[4][4] = {};
  const int stages = (a.dim + C::kDepth - 1) / C::kDepth;
  load_stage(0);
  for (int s = 0; s < stages; ++s) {
#pragma unroll
    for (int u = 0; u < C::kLoads; ++u) {
      const int m = u / 2, e = static_cast<int>(threadIdx.x) + kThreads * (u % 2);
      float* dst = smem + (m * C::kDepth + dim_of(e)) * C::kPitch + row_of(e);
      dst[0] = pre[u].x, dst[C::kPitch] = pre[u].y, dst[2 * C::kPitch] = pre[u].z, dst[3 * C::kPitch] = pre[u].w;
    }
    __syncthreads();
    if (s + 1 < stages) load_stage((s + 1) * C::kDepth);  // in flight during the products below
#pragma unroll
    for (int dd = 0; dd < C::kSlice; ++dd) {
      const int d = g * C::kSlice + dd;
      const float4 q4 = *reinterpret_cast<const float4*>(qs + d * C::kPitch + 4 * ty);
      const float4 k4 = *reinterpret_cast<const float4*>(ks + d * C::kPitch + 4 * tx);
      const float qv[4] = {q4.x, q4.y, q4.z, q4.w}, kv[4] = {k4.x, k4.y, k4.z, k4.w};
#pragma unroll
      for (int u = 0; u < 4; ++u)
#pragma unroll
        for (int w = 0; w < 4; ++w) acc[u][w] = fmaf(qv[u], kv[w], acc[u][w]);
    }
    __syncthreads();
  }

  // Partial sums to shared memory ([group][i][j], over the stage buffers), then each thread adds
  // up the groups of kOut outputs (consecutive threads: consecutive j, coalesced stores).
  float* part = smem;
#pragma unroll
  for (int u = 0; u < 4; ++u)
    *reinterpret_cast<float4*>(part + (g * kTile + 4 * ty + u) * kTile + 4 * tx) =
        make_float4(acc[u][0], acc[u][1], acc[u][2], acc[u][3]);
  __syncthreads();
  constexpr int kOut = kTile * kTile / kThreads;
  const auto ij = [&](int n) {  // (i, j) of output n of this thread
    const int o = static_cast<int>(threadIdx.x) + kThreads * n;
    return int2{i0 + o / kTile, j0 + o % kTile};
  };
  float z[kOut];
  unsigned links[kOut];  // which lanes of the warp have a link at output n
  int total = 0;
#pragma unroll
  for (int n = 0; n < kOut; ++n) {
    const int o = static_cast<int>(threadIdx.x) + kThreads * n;
    z[n] = part[o];
#pragma unroll
    for (int h = 1; h < kGroups; ++h) z[n] += part[h * kTile * kTile + o];
    const int2 p = ij(n);
    const bool valid = p.x < L && p.y < L;
    if (valid && a.z_out) a.z_out[a.batch.mask_offsets[b] + static_cast<int64_t>(p.x) * L + p.y] = z[n];
    links[n] = __ballot_sync(0xffffffffu, valid && z[n] > a.threshold);
    total += __popc(links[n]);
  }
  // The warp's links: one atomic for all of them, then each lane writes its own.
  if (total == 0) return;  // the whole warp
  const int lane = static_cast<int>(threadIdx.x % 32);
  int slot = 0;
  if (lane == 0) slot = atomicAdd(a.count, total);
  slot = __shfl_sync(0xffffffffu, slot, 0);
#pragma unroll
  for (int n = 0; n < kOut; ++n) {
    if (links[n] >> lane & 1u) {
      const int at = slot + __popc(links[n] & ((1u << lane) - 1u));
      const int2 p = ij(n);
      if (at < a.capacity) a.links[at] = Link{b, p.x, p.y, z[n]};
    }
    slot += __popc(links[n]);
  }
}

template <int kTile, int kGroups>
void launch(const LinkScoresArgs& a, bool vec, cudaStream_t stream) {
  const unsigned tiles = static_cast<unsigned>((a.batch.max_length + kTile - 1) / kTile);
  launch_kernel(link_scores_kernel<kTile, kGroups>, dim3(tiles, tiles, static_cast<unsigned>(a.batch.num_sequences)),
                kThreads, 0, stream, "cuda::link_scores", a, vec);
}

}  // namespace

void link_scores(const LinkScoresArgs& a, cudaStream_t stream) {
  if (a.tile != 0 && a.tile != 16 && a.tile != 32 && a.tile != 64)
    throw InternalError("cuda::link_scores: tile must be 0, 16, 32 or 64, got " + std::to_string(a.tile));
  check(cudaMemsetAsync(a.count, 0, sizeof(int), stream), "cuda::link_scores count");
  if (a.batch.num_sequences <= 0) return;
  // The largest tile whose grid still has a block for (nearly) every multiprocessor: 3/4 of them,
  // so that L128 b32 (128 blocks of 64 on the H200's 132 SMs) takes the 64 tile. bench_kernels_cuda
  // on the H200 (2026-12-02, us for tile 16 / 32 / 64): L128 b1 8.9 / 16.4 / 39.1, b8 20.6 / 17.2 /
  // 39.0, b32 66.6 / 54.8 / 40.1, L512 b1 35.8 / 26.0 / 39.4, b8 246 / 173 / 157: this rule picks
  // the fastest at each.
  int tile = a.tile;
  if (tile == 0) {
    const int sms = device_limits("cuda::link_scores").sms;
    const auto blocks = [&](int t) {
      const int64_t tiles = (a.batch.max_length + t - 1) / t;
      return tiles * tiles * a.batch.num_sequences;
    };
    const int64_t enough = (3 * static_cast<int64_t>(sms) + 3) / 4;
    tile = blocks(64) >= enough ? 64 : blocks(32) >= enough ? 32 : 16;
  }
  const bool vec = a.dim % 4 == 0 && a.ld % 4 == 0 && reinterpret_cast<uintptr_t>(a.q) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(a.k) % 16 == 0;
  if (tile == 64) launch<64, 1>(a, vec, stream);
  else if (tile == 32) launch<32, 4>(a, vec, stream);
  else launch<16, 16>(a, vec, stream);
}

bool try_fetch_links(const LinkScoresArgs& a, cudaStream_t stream, std::vector<Link>& links, int& count,
                     const FetchStaging& staging) {
  count = 0;
  // With the count stored just before the links and page-locked staging for it and a prefix of
  // them: one copy and one wait where no more links than that prefix were found.
  const bool one_copy = staging.host != nullptr && a.links == reinterpret_cast<const Link*>(a.count) + 1;
  const int prefix = one_copy ? std::min(staging.links, a.capacity) : 0;
  if (one_copy) {
    check(cudaMemcpyAsync(staging.host, a.count, sizeof(Link) * (1 + static_cast<size_t>(prefix)), cudaMemcpyDeviceToHost,
                          stream),
          "cuda::fetch_links count and links");
    check(cudaStreamSynchronize(stream), "cuda::fetch_links");
    std::memcpy(&count, staging.host, sizeof count);
  } else {
    check(cudaMemcpyAsync(&count, a.count, sizeof count, cudaMemcpyDeviceToHost, stream), "cuda::fetch_links count");
    check(cudaStreamSynchronize(stream), "cuda::fetch_links");
  }
  if (count > a.capacity) return false;
  links.resize(static_cast<size_t>(count));
  if (count <= prefix) {
    if (count > 0) std::memcpy(links.data(), static_cast<const Link*>(staging.host) + 1, sizeof(Link) * links.size());
  } else if (count > 0) {
    check(cudaMemcpyAsync(links.data(), a.links, sizeof(Link) * links.size(), cudaMemcpyDeviceToHost, stream),
          "cuda::fetch_links copy");
    check(cudaStreamSynchronize(stream), "cuda::fetch_links");
  }
  sort_links(links, a.batch.max_length);
  return true;
}

void sort_links(std::vector<Link>& links, int max_length) {
  // LSD radix sort of (sequence * max_length + row) * max_length + col, 11 bits a pass, as many
  // passes as the largest key needs (2 for 8 sequences of 512); stable, so ties keep their order.
  const size_t n = links.size();
  if (n < 2) return;
  constexpr int kBits = 11;
  constexpr uint64_t kMask = (uint64_t{1} << kBits) - 1;
  const auto key_of = [max_length](const Link& l) {
    return (static_cast<uint64_t>(l.sequence) * static_cast<uint64_t>(max_length) + static_cast<uint64_t>(l.row)) *
               static_cast<uint64_t>(max_length) +
           static_cast<uint64_t>(l.col);
  };
  uint64_t max_key = 0;
  for (const Link& l : links) max_key = std::max(max_key, key_of(l));
  std::vector<Link> other(n);
  std::vector<size_t> count(kMask + 2);
  for (int shift = 0; shift == 0 || (shift < 64 && (max_key >> shift) != 0); shift += kBits) {
    std::fill(count.begin(), count.end(), 0);
    for (const Link& l : links) ++count[((key_of(l) >> shift) & kMask) + 1];
    for (size_t d = 0; d <= kMask; ++d) count[d + 1] += count[d];
    for (const Link& l : links) other[count[(key_of(l) >> shift) & kMask]++] = l;
    links.swap(other);
  }
}

std::vector<Link> fetch_links(const LinkScoresArgs& a, cudaStream_t stream) {
  std::vector<Link> links;
  int count = 0;
  if (!try_fetch_links(a, stream, links, count))
    throw InternalError("cuda::fetch_links: " + std::to_string(count) + " links above the threshold, buffer holds " +
                        std::to_string(a.capacity));
  return links;
}

}  // namespace rexnlu::backends::cuda
