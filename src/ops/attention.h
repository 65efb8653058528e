// DeBERTa-v2 disentangled self-attention for ONE sequence, all heads (spec section 3):
//   S[i,j] = ( Q_i·K_j + Q_i·Kr[idx(i,j)] + K_j·Qr[idx(i,j)] ) / scale      (per head)
//   idx(i,j) = clamp(pos_i - pos_j + rel_rows/2, 0, rel_rows - 1)
//   P = XSoftmax(S, mask); out = P · V
// XSoftmax: masked scores count as finfo(float32).min, masked outputs are 0, so a row with every
// column masked comes out all zeros.
#pragma once

#include <vector>

#include "backends/backend.h"
#include "ops/packed_sequences.h"

namespace rexnlu::ops {

struct DisentangledAttention {
  int num_heads = 0;  // head n uses columns [n*head_dim, (n+1)*head_dim) of q, k, v, out
  float scale = 1.0f;  // float32(sqrt(head_dim * 3))
  // q, k, v, q_rel, k_rel, out: one storage type, F32 or the backend's activation type (scores,
  // softmax and the sums are fp32 either way).
  ConstTensorRef q, k, v;       // [L, heads*head_dim], any row stride
  ConstTensorRef q_rel, k_rel;  // [rel_rows, heads*head_dim]: Qr = query_proj(R), Kr = key_proj(R)
  ConstTensorRef position_ids;  // I32 [L]
  ConstTensorRef mask;          // U8 [L, L], nonzero = row token may attend to column token
  TensorRef out;                // [L, heads*head_dim], any row stride
};

// Scratch comes from the backend's workspace and is released before it returns.
void disentangled_attention(backends::Backend& be, const DisentangledAttention& a);

// The same for every sequence of a packed batch in one call: sequence b owns rows
// [offsets[b], offsets[b+1]) of a.q, a.k, a.v, a.position_ids and a.out and attends under
// seqs.masks[b]; a.mask is not used. The CPU runs the sequences one after another, the GPU all
// of them in one launch (copying nothing from the host).
void disentangled_attention(backends::Backend& be, const DisentangledAttention& a, const PackedSequences& seqs);

}  // namespace rexnlu::ops
