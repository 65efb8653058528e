// The per-row passes of the CPU disentangled attention (disentangled_attention.cpp), one query
// row i at a time, S row read and written once per pass, vectorised for AVX-512 and AVX2 (cpu_isa.h
// picks at run time; scalar elsewhere):
//   add_relative_terms: S[i,j] = mask ? S[i,j] + (c2p[i, r] + p2c[j, r]) / scale : -inf over a run
//                       of keys, r = idx(i,j) = clamp(pos_i - pos_j + rel_rows/2, 0, rel_rows - 1),
//                       and the running row max of the kept entries;
//   exp_and_sum:        S[i,j] = exp(S[i,j] - max) (exactly 0 where -inf) and the row sum.
// The caller then divides the row by its sum: XSoftmax, masked entries 0.
#pragma once

#include <cstdint>

#include "backends/cpu/cpu_isa.h"

namespace rexnlu::backends::cpu {

// One query row against the keys [0, n) of a run of keys. c2p and p2c are stored with `step`
// floats between consecutive relative rows r: Q_i · Kr[r] = c2p[c2p_offset + r * step] and
// K_j · Qr[r] = p2c[key_offset[j] + r * step] (offsets may be negative; the sums are not).
struct RelativeTerms {
  const int32_t* key_pos = nullptr;     // [n] positions of the keys
  const int32_t* key_offset = nullptr;  // [n]
  const uint8_t* mask = nullptr;        // [n] nonzero = keep
  int query_pos = 0;                    // pos_i + rel_rows/2
  int max_index = 0;                    // rel_rows - 1
  const float* c2p = nullptr;
  int c2p_offset = 0;
  const float* p2c = nullptr;
  int step = 0;
  float inv_scale = 1.0f;
};

// s[j] for j in [0, n) as above; returns max(running_max, max of the kept s[j]) (-inf if none).
float add_relative_terms(VecIsa isa, float* s, int n, const RelativeTerms& t, float running_max);

// s[j] = exp(s[j] - max), 0 where s[j] is -inf; returns the sum. max must be finite.
float exp_and_sum(VecIsa isa, float* s, int n, float max);

}  // namespace rexnlu::backends::cpu
