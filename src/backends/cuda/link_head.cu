// The link head's token-pair scores Z = q · k^T per sequence (fp32), thresholded on the device
// so that only the links decoding reads are copied back.
#include <algorithm>
#include <string>
#include <vector>

#include "backends/cuda/ops.h"
#include "rexnlu/error.h"

namespace rexnlu::backends::cuda {

namespace {

// Small tiles: at batch 1 a sequence has few of them, and each block's loop over the 768 dims
// is latency-bound, so more blocks beat more reuse per block.
constexpr int kTile = 32;   // output tile kTile x kTile per block
constexpr int kDepth = 32;  // dims per shared-memory step
constexpr int kThreads = 256;  // 16 x 16 threads, 2 x 2 outputs each
constexpr int kPer = kTile / 16;

__global__ void link_scores_kernel(LinkScoresArgs a) {
  const int b = blockIdx.z;
  const int row0 = a.batch.offsets[b];
  const int L = a.batch.offsets[b + 1] - row0;
  const int i0 = blockIdx.y * kTile, j0 = blockIdx.x * kTile;
  if (i0 >= L || j0 >= L) return;
  __shared__ float qs[kDepth][kTile + 4], ks[kDepth][kTile + 4];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  float acc[kPer][kPer] = {};
  for (int d0 = 0; d0 < a.dim; d0 += kDepth) {
    for (int e = threadIdx.x; e < kTile * kDepth; e += kThreads) {
      const int r = e / kDepth, d = e % kDepth;
      const bool in_d = d0 + d < a.dim;
      qs[d][r] = (i0 + r < L && in_d) ? a.q[static_cast<size_t>(row0 + i0 + r) * a.ld + d0 + d] : 0.0f;
      ks[d][r] = (j0 + r < L && in_d) ? a.k[static_cast<size_t>(row0 + j0 + r) * a.ld + d0 + d] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int d = 0; d < kDepth; ++d) {
      float qv[kPer], kv[kPer];
#pragma unroll
      for (int u = 0; u < kPer; ++u) {
        qv[u] = qs[d][ty + 16 * u];
        kv[u] = ks[d][tx + 16 * u];
      }
#pragma unroll
      for (int u = 0; u < kPer; ++u)
#pragma unroll
        for (int w = 0; w < kPer; ++w) acc[u][w] = fmaf(qv[u], kv[w], acc[u][w]);
    }
    __syncthreads();
  }
  const int64_t zbase = a.batch.mask_offsets[b];
  for (int u = 0; u < kPer; ++u)
    for (int w = 0; w < kPer; ++w) {
      const int i = i0 + ty + 16 * u, j = j0 + tx + 16 * w;
      if (i >= L || j >= L) continue;
      const float z = acc[u][w];
      if (a.z_out) a.z_out[zbase + static_cast<int64_t>(i) * L + j] = z;
      if (z > a.threshold) {
        const int slot = atomicAdd(a.count, 1);
        if (slot < a.capacity) a.links[slot] = Link{b, i, j, z};
      }
    }
}

}  // namespace

void link_scores(const LinkScoresArgs& a, cudaStream_t stream) {
  check(cudaMemsetAsync(a.count, 0, sizeof(int), stream), "cuda::link_scores count");
  if (a.batch.num_sequences <= 0) return;
  const int tiles = (a.batch.max_length + kTile - 1) / kTile;
  link_scores_kernel<<<dim3(tiles, tiles, a.batch.num_sequences), kThreads, 0, stream>>>(a);
  check_launch("cuda::link_scores");
}

std::vector<Link> fetch_links(const LinkScoresArgs& a, cudaStream_t stream) {
  int count = 0;
  check(cudaMemcpyAsync(&count, a.count, sizeof count, cudaMemcpyDeviceToHost, stream), "cuda::fetch_links count");
  check(cudaStreamSynchronize(stream), "cuda::fetch_links");
  if (count > a.capacity)
    throw InternalError("cuda::fetch_links: " + std::to_string(count) + " links above the threshold, buffer holds " +
                        std::to_string(a.capacity));
  std::vector<Link> links(static_cast<size_t>(count));
  if (count > 0)
    check(cudaMemcpyAsync(links.data(), a.links, sizeof(Link) * links.size(), cudaMemcpyDeviceToHost, stream),
          "cuda::fetch_links copy");
  check(cudaStreamSynchronize(stream), "cuda::fetch_links");
  std::sort(links.begin(), links.end(), [](const Link& x, const Link& y) {
    return x.sequence != y.sequence ? x.sequence < y.sequence : x.row != y.row ? x.row < y.row : x.col < y.col;
  });
  return links;
}

}  // namespace rexnlu::backends::cuda
