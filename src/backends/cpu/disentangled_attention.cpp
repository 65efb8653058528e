#include "backends/cpu/disentangled_attention.h"

#include <omp.h>

#include <algorithm>
#include <string>

#include "backends/cpu/gemm.h"
#include "backends/cpu/softmax.h"
#include "rexnlu/error.h"

namespace rexnlu::backends::cpu {

namespace {
size_t per_thread_floats(int length, int span) {
  return static_cast<size_t>(length) * length + 2 * static_cast<size_t>(length) * span;
}
}  // namespace

size_t disentangled_attention_scratch_floats(int max_length, int rel_rows) {
  return per_thread_floats(max_length, rel_rows) * static_cast<size_t>(omp_get_max_threads());
}

void disentangled_attention(const DisentangledAttentionArgs& a) {
  const int L = a.length;
  const int d = a.head_dim;
  const int span_half = a.rel_rows / 2;
  const int32_t* pos = a.position_ids;
  const auto [min_it, max_it] = std::minmax_element(pos, pos + L);
  const int max_rel = *max_it - *min_it;
  // Only relative-embedding rows [lo, hi] can be indexed by this sequence.
  const int lo = std::clamp(span_half - max_rel, 0, a.rel_rows - 1);
  const int hi = std::clamp(span_half + max_rel, 0, a.rel_rows - 1);
  const int span = hi - lo + 1;
  const float inv_scale = 1.0f / a.scale;

  const int threads = std::min(omp_get_max_threads(), a.num_heads);
  const size_t per_thread = per_thread_floats(L, span);
  if (a.scratch == nullptr || per_thread * threads > a.scratch_floats)
    throw InternalError("disentangled_attention: scratch of " + std::to_string(a.scratch_floats) +
                        " floats, needs " + std::to_string(per_thread * threads));
  float* scratch = a.scratch;

#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int h = 0; h < a.num_heads; ++h) {
    float* scores = scratch + per_thread * omp_get_thread_num();  // [L, L]
    float* c2p = scores + static_cast<size_t>(L) * L;             // [L, span]: Q_i · Kr[lo + r]
    float* p2c = c2p + static_cast<size_t>(L) * span;             // [L, span]: K_j · Qr[lo + r]
    const float* q = a.q + h * d;
    const float* k = a.k + h * d;
    const float* v = a.v + h * d;
    gemm(true, L, L, d, inv_scale, q, a.ld_qkv, k, a.ld_qkv, 0.0f, scores, L);
    gemm(true, L, span, d, 1.0f, q, a.ld_qkv, a.k_rel + static_cast<size_t>(lo) * a.ld_rel + h * d,
         a.ld_rel, 0.0f, c2p, span);
    gemm(true, L, span, d, 1.0f, k, a.ld_qkv, a.q_rel + static_cast<size_t>(lo) * a.ld_rel + h * d,
         a.ld_rel, 0.0f, p2c, span);
    for (int i = 0; i < L; ++i) {
      float* s = scores + static_cast<size_t>(i) * L;
      const float* c2p_i = c2p + static_cast<size_t>(i) * span;
      for (int j = 0; j < L; ++j) {
        // c2p and p2c use the SAME index idx(i,j) = clamp(pos_i - pos_j + 256) (spec 3).
        const int r = std::clamp(pos[i] - pos[j] + span_half, 0, a.rel_rows - 1) - lo;
        s[j] += (c2p_i[r] + p2c[static_cast<size_t>(j) * span + r]) * inv_scale;
      }
    }
    masked_softmax(scores, L, L, L, a.mask, L);
    gemm(false, L, d, L, 1.0f, scores, L, v, a.ld_qkv, 0.0f, a.out + h * d, a.ld_out);
  }
}

}  // namespace rexnlu::backends::cpu
