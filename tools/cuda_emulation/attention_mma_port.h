// A CPU port of attention_mma_kernel (src/backends/cuda/attention_mma.cu, CUDA stage 3) for one
// sequence, for diagnosis only (README.md): the same tiles (32 queries x 32 keys), windows of 64
// relative rows, c2p/p2c gather, online softmax per key chunk and rounding of the staged inputs and
// of P (mode 0: none, 1: fp16, 2: bf16); the phases between the kernel's barriers run one after
// the other, so it shows what the kernel's algorithm computes, not its races.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>
namespace emu {
inline float rnd(float x, int mode) {
  if (mode == 1) return static_cast<float>(static_cast<_Float16>(x));  // GCC/Clang on x86-64
  if (mode == 2) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    u += 0x7fff + ((u >> 16) & 1);
    u &= 0xffff0000u;
    float r;
    std::memcpy(&r, &u, 4);
    return r;
  }
  return x;
}
// q,k,v: rows of ld_qkv (head h at h*D); q_rel/k_rel rows of ld_rel; out rows of ld_out.
inline void mma_attention(int L, int heads, int D, const float* q, const float* k, const float* v, int ld_qkv,
                          const float* q_rel, const float* k_rel, int ld_rel, int rel_rows, const int32_t* pos,
                          const uint8_t* mask, float scale, float* out, int ld_out, int mode, long* windows_hist) {
  constexpr int kBq = 32, kBk = 32, kBr = 64;
  const int half = rel_rows / 2;
  const float inv_scale = 1.0f / scale;
  for (int h = 0; h < heads; ++h)
    for (int i0 = 0; i0 < L; i0 += kBq) {
      const int nq = std::min(kBq, L - i0);
      std::vector<float> qs(kBq * D, 0), ks(kBk * D), vs(kBk * D), krs(kBr * D), qrs(kBr * D), ss(kBq * kBk),
          c2p(kBq * kBr), p2c(kBk * kBr), os(kBq * D, 0), ps(kBq * kBk);
      int posq[kBq], posk[kBk];
      for (int r = 0; r < kBq; ++r)
        for (int c = 0; c < D; ++c) qs[r * D + c] = r < nq ? rnd(q[(size_t)(i0 + r) * ld_qkv + h * D + c], mode) : 0.f;
      for (int t = 0; t < kBq; ++t) posq[t] = t < nq ? pos[i0 + t] : pos[i0];
      int qmin = posq[0], qmax = posq[0];
      for (int i = 1; i < nq; ++i) qmin = std::min(qmin, posq[i]), qmax = std::max(qmax, posq[i]);
      float m_run[kBq], l_run[kBq];
      for (int r = 0; r < kBq; ++r) m_run[r] = -INFINITY, l_run[r] = 0;
      for (int j0 = 0; j0 < L; j0 += kBk) {
        const int nk = std::min(kBk, L - j0);
        for (int r = 0; r < kBk; ++r)
          for (int c = 0; c < D; ++c) {
            ks[r * D + c] = r < nk ? rnd(k[(size_t)(j0 + r) * ld_qkv + h * D + c], mode) : 0.f;
            vs[r * D + c] = r < nk ? rnd(v[(size_t)(j0 + r) * ld_qkv + h * D + c], mode) : 0.f;
          }
        for (int t = 0; t < kBk; ++t) posk[t] = t < nk ? pos[j0 + t] : pos[j0];
        int kmin = posk[0], kmax = posk[0];
        for (int j = 1; j < nk; ++j) kmin = std::min(kmin, posk[j]), kmax = std::max(kmax, posk[j]);
        for (int i = 0; i < kBq; ++i)
          for (int j = 0; j < kBk; ++j) {
            float s = 0;
            for (int d = 0; d < D; ++d) s += qs[i * D + d] * ks[j * D + d];
            ss[i * kBk + j] = s;
          }
        const int rlo = std::min(std::max(qmin - kmax + half, 0), rel_rows - 1);
        const int rhi = std::min(std::max(qmax - kmin + half, 0), rel_rows - 1);
        int nwin = 0;
        for (int r0 = rlo; r0 <= rhi; r0 += kBr) {
          ++nwin;
          const int nr = std::min(kBr, rhi - r0 + 1);
          for (int r = 0; r < kBr; ++r)
            for (int c = 0; c < D; ++c) {
              krs[r * D + c] = r < nr ? rnd(k_rel[(size_t)(r0 + r) * ld_rel + h * D + c], mode) : 0.f;
              qrs[r * D + c] = r < nr ? rnd(q_rel[(size_t)(r0 + r) * ld_rel + h * D + c], mode) : 0.f;
            }
          for (int i = 0; i < kBq; ++i)
            for (int r = 0; r < kBr; ++r) {
              float s = 0, t = 0;
              for (int d = 0; d < D; ++d) s += qs[i * D + d] * krs[r * D + d], t += ks[i * D + d] * qrs[r * D + d];
              c2p[i * kBr + r] = s;
              p2c[i * kBr + r] = t;  // kBq == kBk
            }
          for (int i = 0; i < kBq; ++i)
            for (int j = 0; j < kBk; ++j) {
              const int rr = std::min(std::max(posq[i] - posk[j] + half, 0), rel_rows - 1) - r0;
              if (rr >= 0 && rr < nr) ss[i * kBk + j] += c2p[i * kBr + rr] + p2c[j * kBr + rr];
            }
        }
        if (windows_hist) windows_hist[std::min(nwin, 9)]++;
        for (int i = 0; i < kBq; ++i) {
          float sv[kBk], mx = -INFINITY;
          for (int j = 0; j < kBk; ++j) {
            const bool keep = i < nq && j < nk && mask[(size_t)(i0 + i) * L + j0 + j] != 0;
            sv[j] = keep ? ss[i * kBk + j] * inv_scale : -INFINITY;
            mx = std::max(mx, sv[j]);
          }
          const float m_new = std::max(m_run[i], mx);
          float sum = 0;
          for (int j = 0; j < kBk; ++j) {
            const float p = sv[j] != -INFINITY ? std::exp(sv[j] - m_new) : 0.f;
            sum += p;
            ps[i * kBk + j] = rnd(p, mode);
          }
          const float alpha = m_new == -INFINITY ? 1.f : std::exp(m_run[i] - m_new);
          l_run[i] = l_run[i] * alpha + sum;
          m_run[i] = m_new;
          for (int c = 0; c < D; ++c) os[i * D + c] *= alpha;
        }
        for (int i = 0; i < kBq; ++i)
          for (int c = 0; c < D; ++c) {
            float acc = os[i * D + c];
            for (int j = 0; j < kBk; ++j) acc += ps[i * kBk + j] * vs[j * D + c];
            os[i * D + c] = acc;
          }
      }
      for (int i = 0; i < nq; ++i) {
        const float inv = l_run[i] > 0 ? 1.f / l_run[i] : 0.f;
        for (int c = 0; c < D; ++c) out[(size_t)(i0 + i) * ld_out + h * D + c] = os[i * D + c] * inv;
      }
    }
}
}  // namespace emu
