// DeBERTa-v2 disentangled self-attention for ONE sequence, all heads (spec section 3):
//   S[i,j] = ( Q_i·K_j + Q_i·Kr[idx(i,j)] + K_j·Qr[idx(i,j)] ) / scale      (per head)
//   idx(i,j) = clamp(pos_i - pos_j + rel_rows/2, 0, rel_rows - 1)
//   P = XSoftmax(S, mask); out = P · V
// c2p and p2c are computed as the products Q·Kr^T and K·Qr^T per tile of 32 queries (keys),
// each restricted to the relative rows that tile's pairs index (a band: about L + 32 rows of the
// 2L - 1 a whole sequence of consecutive positions spans), then gathered into the score rows in
// the pass that also masks and exponentiates them (attention_rows.h): no per-pair copies of Kr/Qr rows.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rexnlu::backends::cpu {

struct DisentangledAttentionArgs {
  int length = 0;     // L tokens
  int num_heads = 0;  // head n uses columns [n*head_dim, (n+1)*head_dim) of q, k, v, out
  int head_dim = 0;
  const float* q = nullptr;  // [L, heads*head_dim], row stride ld_qkv
  const float* k = nullptr;
  const float* v = nullptr;
  int ld_qkv = 0;
  const float* q_rel = nullptr;  // Qr = query_proj(R) [rel_rows, heads*head_dim], stride ld_rel
  const float* k_rel = nullptr;  // Kr = key_proj(R)
  int ld_rel = 0;
  int rel_rows = 0;                        // 2 * position_buckets = 512
  const int32_t* position_ids = nullptr;   // [L]
  const uint8_t* mask = nullptr;           // [L*L], nonzero = row token may attend to column
  float scale = 1.0f;                      // float32(sqrt(head_dim * 3))
  float* out = nullptr;                    // [L, heads*head_dim], row stride ld_out
  int ld_out = 0;
  float* scratch = nullptr;  // disentangled_attention_scratch_floats(...) floats, reusable across calls
  size_t scratch_floats = 0;
};

// Scratch for sequences of up to max_length tokens with the current worker-thread count: per
// thread one score matrix, Q^T and K^T of a head, and the two relative-position products (at
// most rel_rows relative rows each: the bound for any positions, for buffers reused across calls).
size_t disentangled_attention_scratch_floats(int max_length, int head_dim, int rel_rows);
// Exactly what disentangled_attention(a) needs: the relative rows its positions can index (about
// 2L for consecutive positions, much less than rel_rows for short texts) and its thread count.
// a.length, num_heads, head_dim, rel_rows and position_ids must be set.
size_t disentangled_attention_scratch_floats(const DisentangledAttentionArgs& a);

// Heads run in parallel on the worker threads. Throws rexnlu::Error (kInternal) when the
// scratch is too small.
void disentangled_attention(const DisentangledAttentionArgs& args);

}  // namespace rexnlu::backends::cpu
