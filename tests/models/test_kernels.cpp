// CPU kernels against plain reference loops (double accumulation).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/activations.h"
#include "kernels/conv1d.h"
#include "kernels/cpu/vec_math.h"
#include "kernels/disentangled_attention.h"
#include "kernels/gemm.h"
#include "kernels/layer_norm.h"
#include "kernels/rotary.h"
#include "kernels/softmax.h"
#include "rexnlu/error.h"
#include "tensor/workspace.h"

namespace rexnlu::kernels::cpu {
namespace {

std::vector<float> random_vec(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << "at index " << i;
}

// C = alpha * A · op(B) + beta * C, all row-major with explicit leading dims.
std::vector<double> gemm_ref(bool trans_b, int M, int N, int K, float alpha, const std::vector<float>& A,
                             int lda, const std::vector<float>& B, int ldb, float beta,
                             const std::vector<float>& C, int ldc) {
  std::vector<double> out(C.begin(), C.end());
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double s = 0;
      for (int k = 0; k < K; ++k)
        s += double(A[m * lda + k]) * (trans_b ? B[n * ldb + k] : B[k * ldb + n]);
      out[m * ldc + n] = alpha * s + beta * double(C[m * ldc + n]);
    }
  return out;
}

TEST(Gemm, MatchesReferenceLoopForBothLayoutsAndStrides) {
  // Sizes straddle the threading threshold and the 16-column split; leading dims exceed widths.
  for (auto [M, N, K] : {std::tuple{1, 1, 1}, {3, 5, 7}, {37, 130, 64}, {200, 300, 96}}) {
    for (bool trans_b : {true, false}) {
      const int lda = K + 3, ldb = (trans_b ? K : N) + 2, ldc = N + 5;
      auto A = random_vec(size_t(M) * lda, 1), B = random_vec(size_t(trans_b ? N : K) * ldb, 2);
      auto C = random_vec(size_t(M) * ldc, 3);
      auto want = gemm_ref(trans_b, M, N, K, 0.5f, A, lda, B, ldb, 2.0f, C, ldc);
      gemm(trans_b, M, N, K, 0.5f, A.data(), lda, B.data(), ldb, 2.0f, C.data(), ldc);
      expect_close(C, want, 1e-5);
    }
  }
}

TEST(Gemm, InsideParallelRegionEachThreadComputesItsOwnProduct) {
  const int M = 150, N = 200, K = 80;
  auto A = random_vec(size_t(M) * K, 4), B = random_vec(size_t(N) * K, 5);
  std::vector<float> zero(size_t(M) * N, 0.0f);
  auto want = gemm_ref(true, M, N, K, 1.0f, A, K, B, K, 0.0f, zero, N);
  std::vector<std::vector<float>> outs(4, zero);
#pragma omp parallel for num_threads(2)
  for (int t = 0; t < 4; ++t) gemm(true, M, N, K, 1.0f, A.data(), K, B.data(), K, 0.0f, outs[t].data(), N);
  for (const auto& o : outs) expect_close(o, want, 1e-5);
}

TEST(Linear, AddsBiasAndWritesIntoWiderRows) {
  const int rows = 9, in = 33, out = 70, ldy = 100;
  auto x = random_vec(size_t(rows) * in, 6), w = random_vec(size_t(out) * in, 7), b = random_vec(out, 8);
  std::vector<float> y(size_t(rows) * ldy, 42.0f);
  linear(x.data(), rows, in, w.data(), b.data(), out, y.data(), ldy);
  for (int r = 0; r < rows; ++r) {
    for (int o = 0; o < out; ++o) {
      double s = b[o];
      for (int i = 0; i < in; ++i) s += double(x[r * in + i]) * w[o * in + i];
      ASSERT_NEAR(y[r * ldy + o], s, 1e-5);
    }
    for (int o = out; o < ldy; ++o) ASSERT_EQ(y[r * ldy + o], 42.0f) << "wrote past the output width";
  }
}

TEST(LayerNorm, BiasedVarianceWithResidualAndInPlace) {
  const int rows = 7, cols = 768;
  const float eps = 1e-7f;
  auto x = random_vec(size_t(rows) * cols, 9, -3, 5), res = random_vec(size_t(rows) * cols, 10);
  auto g = random_vec(cols, 11, 0.5f, 1.5f), b = random_vec(cols, 12);
  std::vector<double> want(x.size());
  for (int r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int c = 0; c < cols; ++c) mean += double(x[r * cols + c]) + res[r * cols + c];
    mean /= cols;
    for (int c = 0; c < cols; ++c) {
      const double d = double(x[r * cols + c]) + res[r * cols + c] - mean;
      var += d * d;
    }
    var /= cols;  // biased, as torch.nn.LayerNorm
    for (int c = 0; c < cols; ++c)
      want[r * cols + c] = (double(x[r * cols + c]) + res[r * cols + c] - mean) / std::sqrt(var + eps) * g[c] + b[c];
  }
  layer_norm(x.data(), res.data(), g.data(), b.data(), eps, rows, cols, x.data());  // in place
  expect_close(x, want, 2e-5);
}

TEST(MaskedSoftmax, MatchesXSoftmaxIncludingFullyMaskedRows) {
  const int rows = 4, cols = 37, ld = 40;
  auto s = random_vec(size_t(rows) * ld, 13, -30, 30);
  std::vector<uint8_t> mask(size_t(rows) * cols, 1);
  for (int c = 0; c < cols; c += 3) mask[1 * cols + c] = 0;  // row 1: some masked
  for (int c = 0; c < cols; ++c) mask[2 * cols + c] = 0;      // row 2: fully masked
  for (int c = 1; c < cols; ++c) mask[3 * cols + c] = 0;      // row 3: one kept
  std::vector<double> want(s.begin(), s.end());
  for (int r = 0; r < rows; ++r) {
    // XSoftmax: masked -> finfo.min, softmax, masked -> 0.
    std::vector<double> v(cols);
    double mx = -std::numeric_limits<double>::infinity(), sum = 0;
    for (int c = 0; c < cols; ++c) {
      v[c] = mask[r * cols + c] ? s[r * ld + c] : double(std::numeric_limits<float>::lowest());
      mx = std::max(mx, v[c]);
    }
    for (int c = 0; c < cols; ++c) sum += std::exp(v[c] - mx);
    for (int c = 0; c < cols; ++c) want[r * ld + c] = mask[r * cols + c] ? std::exp(v[c] - mx) / sum : 0.0;
  }
  masked_softmax(s.data(), rows, cols, ld, mask.data(), cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) ASSERT_NEAR(s[r * ld + c], want[r * ld + c], 1e-6) << r << "," << c;
  for (int c = 0; c < cols; ++c) EXPECT_EQ(s[2 * ld + c], 0.0f);
  EXPECT_NEAR(s[3 * ld + 0], 1.0f, 1e-7);
}

TEST(VecMath, FastExpAndErfMatchLibm) {
  for (float x = -87.0f; x <= 88.0f; x += 0.01f)
    ASSERT_NEAR(fast_exp(x) / std::exp(double(x)), 1.0, 1e-6) << "exp(" << x << ")";
  EXPECT_LT(fast_exp(-1000.0f), 1e-37f);
  for (float x = -6.0f; x <= 6.0f; x += 0.001f)
    ASSERT_NEAR(fast_erf(x), std::erf(double(x)), 5e-7) << "erf(" << x << ")";
}

TEST(GeluErf, MatchesExactFormula) {
  auto x = random_vec(10007, 14, -8, 8);
  std::vector<double> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = 0.5 * x[i] * (1.0 + std::erf(x[i] / std::sqrt(2.0)));
  gelu_erf(x.data(), x.size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], want[i], 1e-6) << i;
}

TEST(Rotary, RotatesAdjacentPairsByPositionTimesFrequency) {
  const int rows = 5, dim = 16, ld = 20;
  auto x = random_vec(size_t(rows) * ld, 15);
  const std::vector<int32_t> pos = {0, 1, 7, 100, 511};
  std::vector<float> freqs(dim / 2);
  for (int m = 0; m < dim / 2; ++m) freqs[m] = float(1.0 / std::pow(10000.0, 2.0 * m / dim));
  std::vector<double> want(x.begin(), x.end());
  for (int r = 0; r < rows; ++r)
    for (int m = 0; m < dim / 2; ++m) {
      const double th = pos[r] * double(freqs[m]);
      const double a = x[r * ld + 2 * m], b = x[r * ld + 2 * m + 1];
      want[r * ld + 2 * m] = a * std::cos(th) - b * std::sin(th);
      want[r * ld + 2 * m + 1] = b * std::cos(th) + a * std::sin(th);
    }
  rotary_interleaved(x.data(), rows, dim, ld, pos.data(), freqs.data());
  expect_close(x, want, 1e-6);  // also checks the 4 padding columns per row are untouched
}

TEST(Conv1dK3, MatchesTorchConv1dWithZeroPadding) {
  for (int L : {1, 2, 9}) {
    const int in = 6, out = 5;
    auto x = random_vec(size_t(L) * in, 16), w = random_vec(size_t(out) * in * 3, 17), b = random_vec(out, 18);
    std::vector<double> want(size_t(L) * out);
    for (int t = 0; t < L; ++t)
      for (int o = 0; o < out; ++o) {
        double s = b[o];
        for (int k = 0; k < 3; ++k) {
          const int src = t + k - 1;
          if (src < 0 || src >= L) continue;
          for (int i = 0; i < in; ++i) s += double(w[(o * in + i) * 3 + k]) * x[src * in + i];
        }
        want[t * out + o] = s;
      }
    const auto taps = pack_conv1d_k3_weight(w.data(), out, in);
    std::vector<float> y(size_t(L) * out);
    conv1d_k3(x.data(), L, in, taps.data(), b.data(), out, y.data());
    expect_close(y, want, 1e-5);
  }
}

// The attention written as literally as the spec: per head, per pair, gather the Kr/Qr row.
TEST(DisentangledAttention, MatchesPerPairReference) {
  const int L = 23, heads = 3, d = 8, HD = heads * d, rel_rows = 16;  // small span: clamping is exercised
  auto qkv = random_vec(size_t(L) * 3 * HD, 19), rel = random_vec(size_t(rel_rows) * 2 * HD, 20);
  std::vector<int32_t> pos(L);
  for (int i = 0; i < L; ++i) pos[i] = (i < 5) ? i : 2 + (i * 7) % 13;  // non-monotonic custom ids
  std::vector<uint8_t> mask(size_t(L) * L);
  std::mt19937 rng(21);
  for (auto& m : mask) m = (rng() % 4) != 0;
  for (int j = 0; j < L; ++j) mask[4 * L + j] = 0;  // one fully masked row
  const float scale = std::sqrt(float(d) * 3.0f);

  std::vector<double> want(size_t(L) * HD, 0.0);
  for (int h = 0; h < heads; ++h) {
    auto Q = [&](int i, int c) { return double(qkv[i * 3 * HD + h * d + c]); };
    auto K = [&](int i, int c) { return double(qkv[i * 3 * HD + HD + h * d + c]); };
    auto V = [&](int i, int c) { return double(qkv[i * 3 * HD + 2 * HD + h * d + c]); };
    auto Qr = [&](int r, int c) { return double(rel[r * 2 * HD + h * d + c]); };
    auto Kr = [&](int r, int c) { return double(rel[r * 2 * HD + HD + h * d + c]); };
    for (int i = 0; i < L; ++i) {
      std::vector<double> s(L);
      double mx = -1e300;
      bool any = false;
      for (int j = 0; j < L; ++j) {
        const int idx = std::clamp(pos[i] - pos[j] + rel_rows / 2, 0, rel_rows - 1);
        double qk = 0, c2p = 0, p2c = 0;
        for (int c = 0; c < d; ++c) {
          qk += Q(i, c) * K(j, c);
          c2p += Q(i, c) * Kr(idx, c);
          p2c += K(j, c) * Qr(idx, c);
        }
        s[j] = (qk + c2p + p2c) / scale;
        if (mask[i * L + j]) { mx = std::max(mx, s[j]); any = true; }
      }
      if (!any) continue;
      double sum = 0;
      for (int j = 0; j < L; ++j) sum += mask[i * L + j] ? std::exp(s[j] - mx) : 0.0;
      for (int j = 0; j < L; ++j) {
        const double p = mask[i * L + j] ? std::exp(s[j] - mx) / sum : 0.0;
        for (int c = 0; c < d; ++c) want[i * HD + h * d + c] += p * V(j, c);
      }
    }
  }
  DisentangledAttentionArgs a;
  a.length = L; a.num_heads = heads; a.head_dim = d;
  a.q = qkv.data(); a.k = qkv.data() + HD; a.v = qkv.data() + 2 * HD; a.ld_qkv = 3 * HD;
  a.q_rel = rel.data(); a.k_rel = rel.data() + HD; a.ld_rel = 2 * HD; a.rel_rows = rel_rows;
  a.position_ids = pos.data(); a.mask = mask.data(); a.scale = scale;
  std::vector<float> out(size_t(L) * HD, 7.0f);
  a.out = out.data(); a.ld_out = HD;
  std::vector<float> scratch(disentangled_attention_scratch_floats(L, rel_rows));
  a.scratch = scratch.data();
  a.scratch_floats = scratch.size();
  disentangled_attention(a);
  expect_close(out, want, 1e-5);
  a.scratch_floats = 10;  // too small: refused, not overrun
  EXPECT_THROW(disentangled_attention(a), Error);
}

TEST(WorkspaceArena, SteadyStateReusesOneBlock) {
  Workspace ws;
  for (int pass = 0; pass < 3; ++pass) {
    ws.reset();
    float* a = ws.alloc<float>(1000);
    float* b = ws.alloc<float>(5000);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
    // Disjoint; in the first pass `b` may come from a new block at a lower address.
    EXPECT_TRUE(b >= a + 1000 || b + 5000 <= a);
    a[999] = 1.0f;
    b[4999] = 2.0f;
  }
  EXPECT_EQ(ws.block_count(), 1);
  const size_t cap = ws.capacity_bytes();
  ws.reset();
  ws.alloc<float>(1000);
  EXPECT_EQ(ws.capacity_bytes(), cap);
}

TEST(WorkspaceArena, FrameReleasesItsBuffers) {
  // Sizes are multiples of 16 floats (the 64-byte alignment), so offsets are exact.
  Workspace ws;
  for (int pass = 0; pass < 2; ++pass) {
    ws.reset();
    float* keep = ws.alloc<float>(112);
    keep[0] = 7.0f;
    float* first = nullptr;
    for (int layer = 0; layer < 4; ++layer) {
      const Workspace::Frame frame(ws);
      float* a = ws.alloc<float>(1024);
      {
        const Workspace::Frame inner(ws);
        ws.alloc<float>(3072)[3071] = 1.0f;
      }
      float* b = ws.alloc<float>(2048);
      a[1023] = b[2047] = 1.0f;
      if (layer == 0) first = a;
      if (pass == 1) {  // steady state: one block, used like a stack
        EXPECT_EQ(a, keep + 112);
        EXPECT_EQ(b, a + 1024);  // the inner frame's 3072 floats were given back
        EXPECT_EQ(a, first);     // every layer reuses the same memory
      }
    }
    EXPECT_EQ(keep[0], 7.0f);
    EXPECT_EQ(ws.used_bytes(), 112 * sizeof(float));
  }
  EXPECT_EQ(ws.block_count(), 1);
  // Peak: 112 + 1024 + 3072 floats (one layer with its inner frame), not 4 layers' worth.
  EXPECT_EQ(ws.capacity_bytes(), (112 + 1024 + 3072) * sizeof(float));
}

TEST(WorkspaceArena, FrameAcrossAGrowingBlock) {
  Workspace ws;
  ws.reset();
  ws.alloc<float>(10);
  float* grown = nullptr;
  for (int layer = 0; layer < 5; ++layer) {  // a first pass larger than any before
    const Workspace::Frame frame(ws);
    float* a = ws.alloc<float>(100000);  // does not fit the first block: a second one is added
    float* b = ws.alloc<float>(100000);  // nor the rest of the second: a third
    if (layer == 0) grown = a;
    EXPECT_EQ(a, grown);  // later layers reuse the blocks the first one added
    a[99999] = b[99999] = 1.0f;
    EXPECT_EQ(ws.block_count(), 3);
  }
  EXPECT_EQ(ws.used_bytes(), 64u);  // 10 floats rounded up to a cache line
  float* p = ws.alloc<float>(50);
  p[49] = 1.0f;
  ws.reset();
  EXPECT_EQ(ws.block_count(), 1);
  EXPECT_EQ(ws.capacity_bytes(), 64 + 200000 * sizeof(float));
}

}  // namespace
}  // namespace rexnlu::kernels::cpu
