#include "ops/cuda_verify.h"

#if REXNLU_HAVE_CUDA
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/cpu/disentangled_attention.h"
#include "backends/cuda/common.h"
#include "tensor/half.h"

namespace rexnlu::ops::cuda_verify {

namespace {

using backends::cuda::check;

// `bytes` at device address `src` into host memory, on `stream` (the backend's: the op's results
// are there), then waited for.
void copy_back(void* host, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  check(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, stream), "cuda_verify");
  check(cudaStreamSynchronize(stream), "cuda_verify");
}

// `count` elements of `type` at device address `src` as floats.
std::vector<float> fetch(const void* src, DType type, size_t count, cudaStream_t stream) {
  std::vector<float> out(count);
  if (type == DType::kF32) {
    copy_back(out.data(), src, count * sizeof(float), stream);
    return out;
  }
  std::vector<uint16_t> raw(count);
  copy_back(raw.data(), src, count * sizeof(uint16_t), stream);
  for (size_t i = 0; i < count; ++i) out[i] = type == DType::kF16 ? f16_to_f32(raw[i]) : bf16_to_f32(raw[i]);
  return out;
}

template <typename T>
std::vector<T> fetch_plain(const void* src, size_t count, cudaStream_t stream) {
  std::vector<T> out(count);
  copy_back(out.data(), src, count * sizeof(T), stream);
  return out;
}

const char* type_name(DType t) { return t == DType::kF32 ? "f32" : t == DType::kF16 ? "f16" : "bf16"; }

// The relative error of storing a value as `t` (round to nearest): 0 for F32, 2^-11 / 2^-8.
double storage_rounding(DType t) { return t == DType::kF16 ? 0x1p-11 : t == DType::kBF16 ? 0x1p-8 : 0.0; }

// `base` + `offset` elements of `type`.
const void* advance(const void* base, size_t offset, DType type) {
  return static_cast<const std::byte*>(base) + offset * dtype_size(type);
}

// The worst |got - want| / max(1, |want|) and where.
struct Worst {
  double err = 0;
  long at = -1;
  float got = 0, want = 0;
  void add(float g, float w, long where) {
    const double e = std::abs(double(g) - w) / std::max(1.0, std::abs(double(w)));
    if (e <= err) return;
    err = std::isnan(e) ? INFINITY : e;
    at = where;
    got = g;
    want = w;
  }
};

}  // namespace

void linear(const backends::cuda::GemmArgs& g, cudaStream_t stream) {
  static long calls = 0;
  ++calls;
  if (!g.trans_b || g.M <= 0 || g.N <= 0) return;
  check(cudaStreamSynchronize(stream), "cuda_verify (linear)");
  const size_t ab = dtype_size(g.ab_type), cs = dtype_size(g.c_type);
  const std::vector<float> B = fetch(g.B, g.ab_type, static_cast<size_t>(g.N - 1) * g.ldb + g.K, stream);
  const std::vector<float> bias = g.bias ? fetch(g.bias, g.c_type, g.N, stream) : std::vector<float>(g.N, 0.0f);
  // Up to 24 rows spread over M, the first and the last among them.
  const int samples = std::min(g.M, 24);
  Worst w;
  float max_in = 0;
  for (int s = 0; s < samples; ++s) {
    const int r = samples == 1 ? 0 : static_cast<int>(static_cast<long>(s) * (g.M - 1) / (samples - 1));
    const std::vector<float> a = fetch(static_cast<const std::byte*>(g.A) + static_cast<size_t>(r) * g.lda * ab,
                                       g.ab_type, g.K, stream);
    const std::vector<float> c = fetch(static_cast<const std::byte*>(g.C) + static_cast<size_t>(r) * g.ldc * cs,
                                       g.c_type, g.N, stream);
    for (float x : a) max_in = std::max(max_in, std::abs(x));
    for (int n = 0; n < g.N; ++n) {
      double acc = 0;
      const float* b = B.data() + static_cast<size_t>(n) * g.ldb;
      for (int k = 0; k < g.K; ++k) acc += double(a[k]) * b[k];
      double want = double(g.alpha) * acc + bias[n];
      if (g.gelu_tanh)
        want = 0.5 * want * (1.0 + std::tanh(0.7978845608028654 * (want + 0.044715 * want * want * want)));
      w.add(c[n], static_cast<float>(want), static_cast<long>(r) * g.N + n);
    }
  }
  // fp32 sums, (the GELU epilogue's own tanh: 1e-3, its accuracy is not documented,) then y stored in its type.
  const double tol = 1e-4 + (g.gelu_tanh ? 1e-3 : 0.0) + storage_rounding(g.c_type);
  std::fprintf(stderr,
               "VERIFY linear #%ld M=%d K=%d N=%d %s->%s%s: worst %.3g at (%ld, %ld) got %.6g want %.6g, max |input| %.4g%s\n",
               calls, g.M, g.K, g.N, type_name(g.ab_type), type_name(g.c_type), g.gelu_tanh ? " +gelu(tanh)" : "", w.err,
               w.at / g.N, w.at % g.N, w.got, w.want, max_in, w.err > tol ? " BAD" : "");
}

void attention(const backends::cuda::AttentionArgs& a, cudaStream_t stream) {
  static long calls = 0;
  ++calls;
  const int B = a.batch.num_sequences;
  if (B <= 0) return;
  check(cudaStreamSynchronize(stream), "cuda_verify (attention)");
  const int H = a.num_heads * a.head_dim;
  const auto offsets = fetch_plain<int32_t>(a.batch.offsets, static_cast<size_t>(B) + 1, stream);
  const auto mask_offsets = fetch_plain<int64_t>(a.batch.mask_offsets, static_cast<size_t>(B), stream);
  const size_t rel = static_cast<size_t>(a.rel_rows - 1) * a.ld_rel + H;
  const std::vector<float> q_rel = fetch(a.q_rel, a.type, rel, stream), k_rel = fetch(a.k_rel, a.type, rel, stream);
  const bool mma = backends::cuda::attention_uses_tensor_cores(a);
  // The first, a middle, the last and the longest sequence.
  std::vector<int> picks{0, B / 2, B - 1};
  int longest = 0;
  for (int b = 1; b < B; ++b)
    if (offsets[b + 1] - offsets[b] > offsets[longest + 1] - offsets[longest]) longest = b;
  picks.push_back(longest);
  std::sort(picks.begin(), picks.end());
  picks.erase(std::unique(picks.begin(), picks.end()), picks.end());
  // + the output's rounding to its storage type (the host reads the same 16-bit inputs, widened).
  const double tol = (a.compute == DType::kF32 || !mma ? 1e-4 : 3e-2) + storage_rounding(a.type);
  Worst worst;
  int worst_seq = 0, bad_rows = 0, rows_checked = 0;
  for (int b : picks) {
    const int row0 = offsets[b], L = offsets[b + 1] - offsets[b];
    if (L <= 0) continue;
    const size_t span = static_cast<size_t>(L - 1) * a.ld_qkv + H;
    const auto at = [&](const void* base) { return advance(base, static_cast<size_t>(row0) * a.ld_qkv, a.type); };
    const std::vector<float> q = fetch(at(a.q), a.type, span, stream), k = fetch(at(a.k), a.type, span, stream),
                             v = fetch(at(a.v), a.type, span, stream);
    const auto pos = fetch_plain<int32_t>(a.batch.position_ids + row0, L, stream);
    const auto mask = fetch_plain<uint8_t>(a.batch.masks + mask_offsets[b], static_cast<size_t>(L) * L, stream);
    const std::vector<float> got =
        fetch(advance(a.out, static_cast<size_t>(row0) * a.ld_out, a.type), a.type,
              static_cast<size_t>(L - 1) * a.ld_out + H, stream);
    std::vector<float> want(static_cast<size_t>(L) * H);
    backends::cpu::DisentangledAttentionArgs c;
    c.length = L, c.num_heads = a.num_heads, c.head_dim = a.head_dim;
    c.q = q.data(), c.k = k.data(), c.v = v.data(), c.ld_qkv = a.ld_qkv;
    c.q_rel = q_rel.data(), c.k_rel = k_rel.data(), c.ld_rel = a.ld_rel, c.rel_rows = a.rel_rows;
    c.position_ids = pos.data(), c.mask = mask.data(), c.scale = a.scale, c.out = want.data(), c.ld_out = H;
    std::vector<float> scratch(backends::cpu::disentangled_attention_scratch_floats(c));
    c.scratch = scratch.data(), c.scratch_floats = scratch.size();
    backends::cpu::disentangled_attention(c);
    for (int i = 0; i < L; ++i) {
      Worst row;
      for (int col = 0; col < H; ++col)
        row.add(got[static_cast<size_t>(i) * a.ld_out + col], want[static_cast<size_t>(i) * H + col], col);
      ++rows_checked;
      bad_rows += row.err > tol;
      if (!(row.err <= worst.err)) {
        worst = row;
        worst.at = static_cast<long>(i) * H + row.at;
        worst_seq = b;
      }
    }
  }
  const int wl = offsets[worst_seq + 1] - offsets[worst_seq];
  std::fprintf(stderr,
               "VERIFY attention #%ld B=%d maxL=%d %s storage, %s %s: worst %.3g in sequence %d (L=%d) row %ld head %ld col %ld "
               "got %.6g want %.6g; %d/%d rows past %.0e%s\n",
               calls, B, a.batch.max_length, type_name(a.type), type_name(a.compute), mma ? "tensor cores" : "fp32 cores", worst.err,
               worst_seq, wl, worst.at / H, (worst.at % H) / a.head_dim, worst.at % a.head_dim, worst.got, worst.want,
               bad_rows, rows_checked, tol, worst.err > tol ? " BAD" : "");
}

}  // namespace rexnlu::ops::cuda_verify
#endif
