#include "backends/cpu/disentangled_attention.h"

#include <omp.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/attention_gemm.h"
#include "backends/cpu/attention_rows.h"
#include "backends/cpu/cpu_isa.h"
#include "rexnlu/error.h"

namespace rexnlu::backends::cpu {

namespace {

// Rows [first, first + count) of Q (a query tile) or of K (a key tile), and the relative rows
// [lo, lo + width) its pairs can index. The tile's c2p (or p2c) block is the product transposed,
// [width, count] with row stride `tile` (the full tile's count), at `offset` floats into the
// thread's c2p (or p2c) scratch: block row r - lo = Kr[r] · Q_i^T over the tile's queries i
// (p2c: Qr[r] · K_j^T). So Q_i · Kr[r] is at offset + (i - first) - lo * tile + r * tile.
struct Tile {
  int first = 0, count = 0;
  int lo = 0, width = 0;
  size_t offset = 0;
};

// Tiles of `tile` rows; query tiles index idx(i, j) for i in the tile and every j, key tiles for
// j in the tile and every i. The blocks add up to at most (L + tile - 1) * span floats (span: the
// whole sequence's).
std::vector<Tile> make_tiles(const int32_t* pos, int L, int tile, int rel_rows, bool queries) {
  const auto [min_it, max_it] = std::minmax_element(pos, pos + L);
  const int pmin = *min_it, pmax = *max_it, half = rel_rows / 2;
  std::vector<Tile> tiles;
  size_t offset = 0;
  for (int first = 0; first < L; first += tile) {
    const int count = std::min(tile, L - first);
    const auto [tmin_it, tmax_it] = std::minmax_element(pos + first, pos + first + count);
    // idx = pos_i - pos_j + half: smallest with the smallest query and largest key position.
    const int lo_raw = queries ? *tmin_it - pmax + half : pmin - *tmax_it + half;
    const int hi_raw = queries ? *tmax_it - pmin + half : pmax - *tmin_it + half;
    Tile t;
    t.first = first;
    t.count = count;
    t.lo = std::clamp(lo_raw, 0, rel_rows - 1);
    t.width = std::clamp(hi_raw, 0, rel_rows - 1) - t.lo + 1;
    t.offset = offset;
    offset += static_cast<size_t>(tile) * t.width;
    tiles.push_back(t);
  }
  return tiles;
}

// Queries (keys) per c2p (p2c) tile. A tile of T queries at consecutive positions indexes L + T - 1
// relative rows, the whole sequence 2L - 1: at L = 128, tiles of 32 compute 62% of the products
// over the whole span. 32 = two AVX-512 vectors of the kernel's columns; 16 and 64 measured within
// 1% at L = 128 and up to 5% slower at L = 512 (one thread, Zen 4).
constexpr int kTile = 32;

// The floats of one query or key tiling's blocks (at most span x (L rounded up to whole tiles)).
size_t blocks_floats(int length, int span) {
  return static_cast<size_t>((length + kTile - 1) / kTile * kTile) * span;
}

// Keys per call of the row pass: long enough to amortise the call, short enough that their p2c
// blocks stay in L1 / L2 while the query tile's rows pass over them.
constexpr int kKeyRun = 128;

size_t per_thread_floats(int length, int head_dim, int span) {
  // scores [L, L], Q^T and K^T [head_dim, L], c2p and p2c blocks, a query tile's row maxima
  const auto L = static_cast<size_t>(length);
  return L * L + 2 * L * static_cast<size_t>(head_dim) + 2 * blocks_floats(length, span) + kTile;
}

// Relative rows the sequence's positions can index: [half - max_rel, half + max_rel], clamped.
int position_span(const DisentangledAttentionArgs& a) {
  const auto [min_it, max_it] = std::minmax_element(a.position_ids, a.position_ids + a.length);
  const int max_rel = *max_it - *min_it;
  const int span_half = a.rel_rows / 2;
  return std::clamp(span_half + max_rel, 0, a.rel_rows - 1) - std::clamp(span_half - max_rel, 0, a.rel_rows - 1) + 1;
}

int worker_threads(const DisentangledAttentionArgs& a) { return std::min(omp_get_max_threads(), a.num_heads); }

}  // namespace

size_t disentangled_attention_scratch_floats(int max_length, int head_dim, int rel_rows) {
  return per_thread_floats(max_length, head_dim, rel_rows) * static_cast<size_t>(omp_get_max_threads());
}

size_t disentangled_attention_scratch_floats(const DisentangledAttentionArgs& a) {
  if (a.length <= 0) return 0;
  return per_thread_floats(a.length, a.head_dim, position_span(a)) * static_cast<size_t>(worker_threads(a));
}

void disentangled_attention(const DisentangledAttentionArgs& a) {
  const int L = a.length;
  const int d = a.head_dim;
  const int32_t* pos = a.position_ids;
  const int span = position_span(a);  // only these relative-embedding rows can be indexed
  const float inv_scale = 1.0f / a.scale;
  const std::vector<Tile> query_tiles = make_tiles(pos, L, kTile, a.rel_rows, true);
  const std::vector<Tile> key_tiles = make_tiles(pos, L, kTile, a.rel_rows, false);
  std::vector<int32_t> key_offset(static_cast<size_t>(L));  // K_j · Qr[r] at p2c[key_offset[j] + r * tile]
  for (const Tile& t : key_tiles)
    for (int j = t.first; j < t.first + t.count; ++j)
      key_offset[j] = static_cast<int32_t>(t.offset) + (j - t.first) - t.lo * kTile;
  const int step = kTile;
  const VecIsa isa = vec_isa();

  const int threads = worker_threads(a);
  const size_t per_thread = per_thread_floats(L, d, span);
  if (a.scratch == nullptr || per_thread * threads > a.scratch_floats)
    throw InternalError("disentangled_attention: scratch of " + std::to_string(a.scratch_floats) +
                        " floats, needs " + std::to_string(per_thread * threads));
  float* scratch = a.scratch;

#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int h = 0; h < a.num_heads; ++h) {
    float* scores = scratch + per_thread * omp_get_thread_num();  // [L, L]
    float* q_t = scores + static_cast<size_t>(L) * L;             // [d, L]
    float* k_t = q_t + static_cast<size_t>(d) * L;                // [d, L]
    float* c2p = k_t + static_cast<size_t>(d) * L;                // query tiles' blocks
    float* p2c = c2p + blocks_floats(L, span);                    // key tiles' blocks
    float* row_max = p2c + blocks_floats(L, span);                // [kTile]: a query tile's
    const float* q = a.q + h * d;
    const float* k = a.k + h * d;
    const float* v = a.v + h * d;
    transpose(isa, q, L, d, a.ld_qkv, q_t, L);
    transpose(isa, k, L, d, a.ld_qkv, k_t, L);
    attention_gemm(isa, L, L, d, inv_scale, q, a.ld_qkv, k_t, L, scores, L);
    for (const Tile& t : query_tiles)
      attention_gemm(isa, t.width, t.count, d, 1.0f, a.k_rel + static_cast<size_t>(t.lo) * a.ld_rel + h * d,
                     a.ld_rel, q_t + t.first, L, c2p + t.offset, step);
    for (const Tile& t : key_tiles)
      attention_gemm(isa, t.width, t.count, d, 1.0f, a.q_rel + static_cast<size_t>(t.lo) * a.ld_rel + h * d,
                     a.ld_rel, k_t + t.first, L, p2c + t.offset, step);
    // Scores + position terms + mask and the row maxima, a query tile against runs of kKeyRun
    // keys (the c2p block and those keys' p2c blocks stay in L1 over the tile's rows); then the
    // tile's rows are exponentiated and normalised.
    for (const Tile& qt : query_tiles) {
      std::fill(row_max, row_max + qt.count, -std::numeric_limits<float>::infinity());
      RelativeTerms terms;
      terms.max_index = a.rel_rows - 1;
      terms.c2p = c2p;
      terms.p2c = p2c;
      terms.step = step;
      terms.inv_scale = inv_scale;
      for (int j0 = 0; j0 < L; j0 += kKeyRun) {
        const int n = std::min(kKeyRun, L - j0);
        terms.key_pos = pos + j0;
        terms.key_offset = key_offset.data() + j0;
        for (int i = qt.first; i < qt.first + qt.count; ++i) {
          terms.query_pos = pos[i] + a.rel_rows / 2;
          terms.c2p_offset = static_cast<int>(qt.offset) + (i - qt.first) - qt.lo * step;
          terms.mask = a.mask + static_cast<size_t>(i) * L + j0;
          row_max[i - qt.first] =
              add_relative_terms(isa, scores + static_cast<size_t>(i) * L + j0, n, terms, row_max[i - qt.first]);
        }
      }
      for (int i = qt.first; i < qt.first + qt.count; ++i) {
        float* s = scores + static_cast<size_t>(i) * L;
        if (row_max[i - qt.first] == -std::numeric_limits<float>::infinity()) {  // fully masked -> zeros (XSoftmax)
          std::fill(s, s + L, 0.0f);
        } else {
          // Normalised before P · V, in the original's order. (Scaling the [L, d] output rows instead
          // saves little and rounds differently; the int8 link flips moved by about 10% either way
          // with such rounding changes: their noise, not a bias.)
          const float inv = 1.0f / exp_and_sum(isa, s, L, row_max[i - qt.first]);
#pragma omp simd
          for (int j = 0; j < L; ++j) s[j] *= inv;
        }
      }
    }
    attention_gemm(isa, L, d, L, 1.0f, scores, L, v, a.ld_qkv, a.out + h * d, a.ld_out);  // out = P · V
  }
}

}  // namespace rexnlu::backends::cpu
