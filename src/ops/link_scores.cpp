#include "ops/link_scores.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "ops/check.h"
#include "ops/linear.h"
#if REXNLU_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/ops.h"
#endif

namespace rexnlu::ops {

using detail::to_int;

int64_t link_capacity(int64_t cells) { return std::max<int64_t>(1, cells / 4); }

namespace {

constexpr const char* kOp = "link_scores";

// A threshold of +inf asks for no links (no score is above it).
bool asks_no_links(float threshold) { return std::isinf(threshold) && threshold > 0; }

// Appends the links of sequence b's scores z (L x L) above `threshold`, by row then column.
void pick_links(const float* z, int b, int64_t L, float threshold, std::vector<ScoreLink>& links) {
  if (asks_no_links(threshold)) return;
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < L; ++j)
      if (const float v = z[i * L + j]; v > threshold)
        links.push_back(ScoreLink{b, static_cast<int32_t>(i), static_cast<int32_t>(j), v});
}

// Every Z_b into host scratch (one product per sequence, as the dense head did), the links
// picked from it row by row.
void cpu_link_scores(backends::Backend& be, const std::vector<int64_t>& offsets, ConstTensorRef q, ConstTensorRef k,
                     const std::vector<LinkScoresQuery>& queries, LinkScores& out) {
  const int B = static_cast<int>(queries.size());
  int64_t total = 0;
  for (int b = 0; b < B; ++b) total += (offsets[b + 1] - offsets[b]) * (offsets[b + 1] - offsets[b]);
  float* z = static_cast<float*>(be.host_scratch(static_cast<size_t>(total) * sizeof(float)));
  out.dense = z;
  int64_t at = 0;
  for (int b = 0; b < B; ++b) {
    const int64_t row0 = offsets[b], L = offsets[b + 1] - row0;
    ops::gemm(be, q.slice(row0, L), k.slice(row0, L), true, 1.0f, 0.0f, host_ref(z + at, {L, L}));
    pick_links(z + at, b, L, queries[b].threshold, out.links);
    if (queries[b].dense) out.dense_at[b] = at;
    at += L * L;
  }
}

#if REXNLU_HAVE_CUDA
// One launch for every Z_b, written to a device buffer with the asked ones first (one copy back),
// and the links above the lowest threshold appended to a buffer of link_capacity(cells): when more
// link than that, every Z_b comes back instead (fewer bytes) and the links are picked from it on
// the host, as on the CPU (the same values: the kernel wrote both).
void cuda_link_scores(backends::Backend& be, const std::vector<int64_t>& offsets, ConstTensorRef q, ConstTensorRef k,
                      const std::vector<LinkScoresQuery>& queries, LinkScores& out) {
  namespace kc = backends::cuda;
  auto& cb = kc::CudaBackend::of(be);
  const cudaStream_t stream = cb.stream();
  const int B = static_cast<int>(queries.size());
  const Workspace::Frame frame(be.workspace());
  std::vector<int32_t> offsets32(offsets.begin(), offsets.end());
  std::vector<int64_t> z_at(B);  // where Z_b goes in the device buffer: asked sequences first
  int64_t asked = 0, total = 0;
  int max_length = 0;
  float threshold = std::numeric_limits<float>::infinity();
  for (int pass = 0; pass < 2; ++pass)
    for (int b = 0; b < B; ++b) {
      if (queries[b].dense != (pass == 0)) continue;
      const int64_t L = offsets[b + 1] - offsets[b];
      z_at[b] = total;
      total += L * L;
      if (pass == 0) asked = total;
      max_length = std::max(max_length, to_int(L));
      threshold = std::min(threshold, queries[b].threshold);
    }
  detail::expect(total <= std::numeric_limits<int>::max(), kOp, "more than 2^31 - 1 scores in one batch");
  kc::LinkScoresArgs a;
  a.batch.num_sequences = B;
  a.batch.max_length = max_length;
  a.batch.rows = to_int(offsets.back());
  const std::vector<ConstTensorRef> uploaded = be.upload_all(  // one copy to the device for both
      {host_ref(offsets32.data(), {B + 1}), ConstTensorRef(reinterpret_cast<const std::byte*>(z_at.data()), DType::kI64, {B})});
  a.batch.offsets = uploaded[0].i32();
  a.batch.mask_offsets = reinterpret_cast<const int64_t*>(uploaded[1].data);
  a.q = q.f32();
  a.k = k.f32();
  a.ld = to_int(q.ld());
  a.dim = to_int(q.cols());
  a.threshold = threshold;
  a.capacity = to_int(link_capacity(total));
  // One buffer: the count (padded to a Link), then the links, so that the count and the first
  // links come back in one copy (kc::try_fetch_links).
  static_assert(sizeof(kc::Link) == 4 * sizeof(float));
  auto* count_and_links = reinterpret_cast<kc::Link*>(be.alloc(DType::kF32, {int64_t{4} * (1 + a.capacity)}).data);
  a.count = reinterpret_cast<int*>(count_and_links);
  a.links = count_and_links + 1;
  a.z_out = be.alloc(DType::kF32, {total}).f32();
  kc::link_scores(a, stream);
  const auto copy_back = [&](int64_t n) {  // Z of the first n cells into page-locked host memory: one DMA
    float* host = static_cast<float*>(be.host_scratch(static_cast<size_t>(n) * sizeof(float)));
    kc::check(cudaMemcpyAsync(host, a.z_out, static_cast<size_t>(n) * sizeof(float), cudaMemcpyDeviceToHost, stream),
              "ops::link_scores copy of the scores");
    return host;
  };
  if (asked > 0) out.dense = copy_back(asked);  // waited for below, with the links' count where links are asked
  for (int b = 0; b < B; ++b)
    if (queries[b].dense) out.dense_at[b] = z_at[b];
  if (asks_no_links(threshold)) {  // the lowest threshold: no query asks for links, no count to fetch
    cb.synchronize("ops::link_scores copy of the scores");
    return;
  }
  // The count and up to 1/64 of the cells' links (at least 1024) come back in one copy; more
  // links than that take a second.
  kc::FetchStaging staging;
  staging.links = static_cast<int>(std::min<int64_t>(a.capacity, std::max<int64_t>(1024, total / 64)));
  staging.host = be.host_scratch(sizeof(kc::Link) * (1 + static_cast<size_t>(staging.links)));
  std::vector<kc::Link> links;
  int count = 0;
  const bool fetched = kc::try_fetch_links(a, stream, links, count, staging);
  cb.mark_synchronized();  // try_fetch_links waited for its copies
  if (!fetched) {
    out.dense = copy_back(total);
    cb.synchronize("ops::link_scores copy of the scores");
    for (int b = 0; b < B; ++b)
      pick_links(out.dense + z_at[b], b, offsets[b + 1] - offsets[b], queries[b].threshold, out.links);
    return;
  }
  out.links.reserve(links.size());
  for (const kc::Link& l : links)  // above the lowest threshold: each sequence keeps its own
    if (l.logit > queries[l.sequence].threshold) out.links.push_back(ScoreLink{l.sequence, l.row, l.col, l.logit});
}
#endif

}  // namespace

void link_scores(backends::Backend& be, const std::vector<int64_t>& offsets, ConstTensorRef q, ConstTensorRef k,
                 const std::vector<LinkScoresQuery>& queries, LinkScores& out) {
  const size_t B = queries.size();
  detail::expect(offsets.size() == B + 1 && offsets.front() == 0 && offsets.back() == q.rows(), kOp,
                 "offsets must hold 0, one end per query and q's row count");
  for (size_t b = 0; b < B; ++b) detail::expect(offsets[b + 1] > offsets[b], kOp, "empty sequence");
  detail::expect_matrix(kOp, "q", q, DType::kF32, be);
  detail::expect_matrix(kOp, "k", k, DType::kF32, be);
  detail::expect(k.rows() == q.rows() && k.cols() == q.cols() && k.ld() == q.ld(), kOp,
                 "q and k must have one shape and one row stride");
  out.links.clear();
  out.dense = nullptr;
  out.dense_at.assign(B, -1);
  if (B == 0) return;
  switch (be.device()) {
    case Device::kCpu:
      cpu_link_scores(be, offsets, q, k, queries, out);
      return;
#if REXNLU_HAVE_CUDA
    case Device::kCuda:
      cuda_link_scores(be, offsets, q, k, queries, out);
      return;
#endif
    default:
      detail::no_kernel(kOp, be);
  }
}

}  // namespace rexnlu::ops
