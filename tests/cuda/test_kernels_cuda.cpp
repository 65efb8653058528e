// CUDA kernels against the CPU kernels (src/backends/cpu) on random inputs of the model's real
// shapes. Without a usable GPU every comparison is skipped with the reason (GTEST_SKIP), so
// CI shows "skipped", never a silent pass; the probe tests run everywhere.
//
// Tolerance: |gpu - cpu| <= tol * max(1, |cpu|), per element.
//  - F32: 1e-4 (issue 13). Both sides compute in fp32; only summation order differs.
//  - F16 / BF16: the inputs are rounded to the storage type BEFORE both sides see them, so the
//    CPU reference computes in fp32 on exactly the values the GPU reads; what remains is the
//    rounding of the output to storage (half an ulp: 2^-11 = 4.9e-4 for fp16, 2^-8 = 3.9e-3
//    for bf16, relative) plus, in the two-step ops (conv taps, GEMM then bias), one more
//    rounding of an intermediate. tol = 4 ulps: 2e-3 (fp16) and 1.6e-2 (bf16).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cpu/activations.h"
#include "backends/cpu/conv1d.h"
#include "backends/cuda/attention_fa.h"
#include "backends/cuda/attention_mma.h"
#include "backends/cuda/common.h"
#include "backends/cuda/device.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/ops.h"
#include "backends/cpu/disentangled_attention.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/layer_norm.h"
#include "backends/cpu/rotary.h"
#include "backends/cpu/softmax.h"
#include "rexnlu/error.h"
#include "random_values.h"

namespace rexnlu::backends {
namespace {

namespace kg = backends::cuda;
namespace kc = backends::cpu;

// ---- host helpers -------------------------------------------------------------------------

// torch Conv1d weight [out, in, 3] -> three [out, in] tap matrices, the layout of
// ops::conv1d_k3_taps (src/ops is not part of the standalone GPU build, tests/cuda/device).
std::vector<float> conv1d_taps(const float* weight, int out, int in) {
  std::vector<float> taps(static_cast<size_t>(3) * out * in);
  for (int k = 0; k < 3; ++k)
    for (int o = 0; o < out; ++o)
      for (int i = 0; i < in; ++i)
        taps[(static_cast<size_t>(k) * out + o) * in + i] = weight[(static_cast<size_t>(o) * in + i) * 3 + k];
  return taps;
}

using rexnlu::testing::random_vec;

// Rounds values to what `type` can hold (so the CPU reference sees the GPU's exact inputs).
void round_to(std::vector<float>& v, DType type) {
  for (float& x : v) {
    if (type == DType::kF16) x = __half2float(__float2half_rn(x));
    if (type == DType::kBF16) x = __bfloat162float(__float2bfloat16_rn(x));
  }
}

std::vector<char> encode(const std::vector<float>& v, DType type) {
  std::vector<char> out(v.size() * dtype_size(type));
  for (size_t i = 0; i < v.size(); ++i) {
    if (type == DType::kF32) std::memcpy(out.data() + 4 * i, &v[i], 4);
    if (type == DType::kF16) { const __half h = __float2half_rn(v[i]); std::memcpy(out.data() + 2 * i, &h, 2); }
    if (type == DType::kBF16) { const __nv_bfloat16 h = __float2bfloat16_rn(v[i]); std::memcpy(out.data() + 2 * i, &h, 2); }
  }
  return out;
}

std::vector<float> decode(const std::vector<char>& bytes, DType type) {
  std::vector<float> out(bytes.size() / dtype_size(type));
  for (size_t i = 0; i < out.size(); ++i) {
    if (type == DType::kF32) std::memcpy(&out[i], bytes.data() + 4 * i, 4);
    if (type == DType::kF16) { __half h; std::memcpy(&h, bytes.data() + 2 * i, 2); out[i] = __half2float(h); }
    if (type == DType::kBF16) { __nv_bfloat16 h; std::memcpy(&h, bytes.data() + 2 * i, 2); out[i] = __bfloat162float(h); }
  }
  return out;
}

double tolerance(DType type) { return type == DType::kF32 ? 1e-4 : type == DType::kF16 ? 2e-3 : 1.6e-2; }

// A device allocation that frees itself.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) { kg::check(cudaMalloc(&ptr_, std::max<size_t>(bytes, 1)), "cudaMalloc"); }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <typename T>
  static DeviceBuffer from(const std::vector<T>& v) {
    DeviceBuffer b(v.size() * sizeof(T));
    kg::check(cudaMemcpy(b.ptr_, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "upload");
    return b;
  }
  static DeviceBuffer from(const std::vector<float>& v, DType type) { return from(encode(v, type)); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; }
  // Fills with NaN bytes (0xFF) so unwritten outputs fail the comparison.
  void poison() { kg::check(cudaMemset(ptr_, 0xFF, bytes_), "poison"); }
  std::vector<float> floats(DType type) const {
    std::vector<char> bytes(bytes_);
    kg::check(cudaDeviceSynchronize(), "sync");
    kg::check(cudaMemcpy(bytes.data(), ptr_, bytes_, cudaMemcpyDeviceToHost), "download");
    return decode(bytes, type);
  }
  template <typename T = void>
  T* get() const { return static_cast<T*>(ptr_); }
  size_t size() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Worst relative error (over max(1, |want|)); NaN counts as infinitely wrong.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(double(got[i]) - want[i]) / std::max(1.0, std::abs(double(want[i])));
    if (!(err <= worst)) { worst = std::isnan(err) ? INFINITY : err; at = i; }
  }
  EXPECT_LE(worst, tol) << what << ": worst at " << at << " got " << got[at] << " want " << want[at];
  std::printf("  %-44s max rel err %.3g (tol %.1g)\n", what.c_str(), worst, tol);
}

// The same bits: the count of elements that differ and the largest difference where they do.
void expect_bits_equal(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t differ = 0, at = 0;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) == 0) continue;
    ++differ;
    const double d = std::abs(double(got[i]) - want[i]);
    if (!(d <= worst)) worst = std::isnan(d) ? INFINITY : d, at = i;
  }
  EXPECT_EQ(differ, 0u) << what << ": " << differ << " of " << got.size() << " values differ, most at " << at << " ("
                        << got[at] << " against " << want[at] << ")";
}

const char* name(DType t) { return t == DType::kF32 ? "f32" : t == DType::kF16 ? "f16" : "bf16"; }

// Position ids of a test batch: kSegments restart at 0..4 with each segment (prompt-like),
// kContiguous run 0..L-1, kScattered run on but jump to a random position in [0, 800) (past
// rel_rows: clamped indices; going back: not monotonic) at one token in 8.
enum class Positions { kSegments, kContiguous, kScattered };

// A packed batch on host and device: lengths, position ids, block-structured 2D masks (prompt
// isolation: each segment of a kSegments / kScattered batch) with one fully masked row.
struct Batch {
  std::vector<int32_t> offsets{0}, positions;
  std::vector<int64_t> mask_offsets;
  std::vector<uint8_t> masks;
  int rows = 0, max_len = 0;

  Batch(const std::vector<int>& lengths, uint32_t seed, Positions pattern = Positions::kSegments) {
    std::mt19937 rng(seed);
    for (int L : lengths) {
      mask_offsets.push_back(static_cast<int64_t>(masks.size()));
      std::vector<int> segment(L);
      int seg = 0, p = 0;
      for (int t = 0; t < L; ++t) {
        if (pattern != Positions::kContiguous && t > 0 && rng() % 23 == 0) { ++seg; p = static_cast<int>(rng() % 5); }
        if (pattern == Positions::kScattered && rng() % 8 == 0) p = static_cast<int>(rng() % 800);
        segment[t] = seg;
        positions.push_back(p++);
      }
      for (int i = 0; i < L; ++i)
        for (int j = 0; j < L; ++j) masks.push_back(segment[i] == segment[j] || segment[j] == seg ? 1 : 0);
      if (L > 3) std::fill_n(masks.end() - static_cast<ptrdiff_t>(L) * L + 2L * L, L, 0);  // row 2 fully masked
      offsets.push_back(offsets.back() + L);
      max_len = std::max(max_len, L);
    }
    rows = offsets.back();
  }
  int length(int b) const { return offsets[b + 1] - offsets[b]; }
  int size() const { return static_cast<int>(mask_offsets.size()); }
};

// Bytes as DeviceBatch::mask_bits holds them: bit k % 32 of word k / 32 = (bytes[k] != 0).
std::vector<uint32_t> bits_of(const std::vector<uint8_t>& bytes) {
  std::vector<uint32_t> words((bytes.size() + 31) / 32, 0u);
  for (size_t k = 0; k < bytes.size(); ++k)
    if (bytes[k] != 0) words[k / 32] |= 1u << (k % 32);
  return words;
}

// The masks go up as bytes and as bits packed here (the masks' offsets are no multiples of 32: the
// flash kernel's funnel shifts and the words two masks share are exercised).
struct DeviceBatchBuffers {
  DeviceBuffer offsets, mask_offsets, positions, masks, mask_bits;
  kg::DeviceBatch view;
  explicit DeviceBatchBuffers(const Batch& b)
      : offsets(DeviceBuffer::from(b.offsets)), mask_offsets(DeviceBuffer::from(b.mask_offsets)),
        positions(DeviceBuffer::from(b.positions)), masks(DeviceBuffer::from(b.masks)),
        mask_bits(DeviceBuffer::from(bits_of(b.masks))) {
    view.num_sequences = b.size();
    view.max_length = b.max_len;
    view.rows = b.rows;
    view.offsets = offsets.get<int32_t>();
    view.mask_offsets = mask_offsets.get<int64_t>();
    view.position_ids = positions.get<int32_t>();
    view.masks = masks.get<uint8_t>();
    view.mask_bits = mask_bits.get<uint32_t>();
    view.mask_span = static_cast<int64_t>(b.masks.size());
  }
};

// ---- probe (runs everywhere) --------------------------------------------------------------

TEST(CudaDevice, ProbeExplainsWhyNotAndNeverThrows) {
  const kg::DeviceInfo info = kg::probe_device(0);
  std::printf("  device 0: %s\n", kg::describe(info).c_str());
  if (!info.usable) {
    EXPECT_FALSE(info.reason.empty());
  }
  const kg::DeviceInfo far = kg::probe_device(1000);
  EXPECT_FALSE(far.usable);
  if (info.usable) {
    EXPECT_EQ(far.reason, "device index 1000 out of range: " + std::to_string(info.device_count) + " device(s)");
  } else {
    EXPECT_EQ(far.reason, info.reason);
  }
  EXPECT_FALSE(kg::probe_device(-1).usable);
}

// Argument checks that happen on the host before any CUDA call (so they run without a GPU too).
TEST(CudaHost, AttentionRejectsBadArgumentsBeforeTouchingTheGpu) {
  kg::AttentionArgs a;
  a.type = DType::kF16, a.batch.num_sequences = 1, a.batch.max_length = 8, a.num_heads = 1, a.head_dim = 64;
  a.rel_rows = 512, a.ld_qkv = 192, a.ld_rel = 128;
  alignas(16) static char buf[64];
  a.q = buf + 2, a.k = buf, a.v = buf, a.q_rel = buf, a.k_rel = buf;  // q misaligned
  try {
    kg::disentangled_attention(a, nullptr);
    ADD_FAILURE() << "misaligned q accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("16-byte aligned"), std::string::npos) << e.what();
  }
  a.q = buf, a.head_dim = 48;
  EXPECT_THROW(kg::disentangled_attention(a, nullptr), Error);
  a.head_dim = 64, a.type = DType::kI32;
  EXPECT_THROW(kg::disentangled_attention(a, nullptr), Error);
  // The flash kernel reads the masks as bits: a batch without them is refused, naming them.
  a.type = a.compute = DType::kF16, a.out = buf, a.ld_out = 64;
  try {
    kg::disentangled_attention_fa(a, nullptr, 64, 1);
    ADD_FAILURE() << "a batch without mask bits accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mask_bits"), std::string::npos) << e.what();
  }
}

TEST(CudaHost, LinkScoresRejectsAnUnknownTile) {
  kg::LinkScoresArgs a;
  a.batch.num_sequences = 1, a.batch.max_length = 8, a.dim = 16, a.ld = 32, a.tile = 48;
  EXPECT_THROW(kg::link_scores(a, nullptr), Error);
}

TEST(CudaHost, RowBucketsArePowersOfTwoFromSixteen) {
  EXPECT_EQ(kg::Blas::row_bucket(1), 16);
  EXPECT_EQ(kg::Blas::row_bucket(16), 16);
  EXPECT_EQ(kg::Blas::row_bucket(17), 32);
  EXPECT_EQ(kg::Blas::row_bucket(128), 128);
  EXPECT_EQ(kg::Blas::row_bucket(129), 256);
  EXPECT_EQ(kg::Blas::row_bucket(4099), 8192);
}

TEST(CudaHost, SortLinksOrdersBySequenceRowColumn) {
  // Shuffled links of 3 sequences of up to 700 tokens (3 radix passes: keys past 2^22), with
  // repeated positions (stable: their logits keep their order), vs std::sort with a comparator.
  std::mt19937 rng(7);
  const int max_length = 700;
  std::vector<kg::Link> links;
  for (int i = 0; i < 5000; ++i)
    links.push_back(kg::Link{static_cast<int32_t>(rng() % 3), static_cast<int32_t>(rng() % max_length),
                             static_cast<int32_t>(rng() % max_length), static_cast<float>(i)});
  links.push_back(links[10]);
  links.back().logit = 1e6f;  // the same position again, later
  std::vector<kg::Link> want = links;
  std::stable_sort(want.begin(), want.end(), [](const kg::Link& x, const kg::Link& y) {
    return x.sequence != y.sequence ? x.sequence < y.sequence : x.row != y.row ? x.row < y.row : x.col < y.col;
  });
  kg::sort_links(links, max_length);
  ASSERT_EQ(links.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(links[i].sequence, want[i].sequence) << i;
    EXPECT_EQ(links[i].row, want[i].row) << i;
    EXPECT_EQ(links[i].col, want[i].col) << i;
    EXPECT_EQ(links[i].logit, want[i].logit) << i;
  }
  std::vector<kg::Link> one{kg::Link{0, 1, 2, 3.0f}}, none;
  kg::sort_links(one, 4);
  kg::sort_links(none, 4);
  EXPECT_EQ(one.size(), 1u);
  EXPECT_TRUE(none.empty());
}

// ---- GPU comparisons ----------------------------------------------------------------------

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    static const kg::DeviceInfo info = kg::probe_device(0);
    if (!info.usable) GTEST_SKIP() << "no usable CUDA device: " << info.reason;
  }
};

const DType kTypes[] = {DType::kF32, DType::kF16, DType::kBF16};

// `blas`'s product of the first M rows of x [*, K] with w [N, K]^T plus bias (x and w of type t,
// bias and the result of type ct) into a NaN-poisoned buffer, read back as floats.
std::vector<float> gpu_linear(kg::Blas& blas, const DeviceBuffer& ws, const DeviceBuffer& x, const DeviceBuffer& w,
                              const DeviceBuffer& bias, int M, int N, int K, DType t, DType ct) {
  DeviceBuffer y(size_t(M) * N * dtype_size(ct));
  y.poison();
  kg::GemmArgs g;
  g.M = M, g.N = N, g.K = K, g.A = x.get(), g.lda = K, g.B = w.get(), g.ldb = K, g.ab_type = t;
  g.C = y.get(), g.ldc = N, g.c_type = ct, g.bias = bias.get();
  blas.gemm(g, ws.get(), ws.size(), nullptr);
  return y.floats(ct);
}

TEST_F(Gpu, GemmMatchesCpuAtModelShapes) {
  kg::Blas blas;
  DeviceBuffer ws(32u << 20);
  // (rows, in, out): qkv, attention output, FFN up, FFN down, head q|k, conv taps.
  for (auto [M, K, N] : {std::tuple{300, 768, 2304}, {300, 768, 768}, {300, 768, 3072}, {300, 3072, 768},
                         {37, 768, 1536}, {5, 64, 192}}) {
    for (DType t : kTypes) {
      for (DType ct : {t, DType::kF32}) {
        if (ct == DType::kF32 && t == DType::kF32 && M != 300) continue;
        auto x = random_vec(size_t(M) * K, 1), w = random_vec(size_t(N) * K, 2, -0.1f, 0.1f);
        auto bias = random_vec(N, 3);
        round_to(x, t), round_to(w, t), round_to(bias, ct);
        std::vector<float> want(size_t(M) * N);
        kc::linear(x.data(), M, K, w.data(), nullptr, 0, bias.data(), N, want.data(), N);
        auto dx = DeviceBuffer::from(x, t), dw = DeviceBuffer::from(w, t), db = DeviceBuffer::from(bias, ct);
        expect_close(gpu_linear(blas, ws, dx, dw, db, M, N, K, t, ct), want, tolerance(ct == DType::kF32 ? DType::kF32 : t),
                     "linear " + std::to_string(M) + "x" + std::to_string(K) + "->" + std::to_string(N) + " " +
                         name(t) + "->" + name(ct));
      }
    }
  }
  // Not transposed (P·V shape), alpha and beta, wider leading dimensions.
  const int M = 128, N = 64, K = 128, lda = 130, ldb = 2304, ldc = 768;
  auto A = random_vec(size_t(M) * lda, 4), B = random_vec(size_t(K) * ldb, 5), C = random_vec(size_t(M) * ldc, 6);
  std::vector<float> want = C;
  kc::gemm(false, M, N, K, 0.5f, A.data(), lda, B.data(), ldb, 2.0f, want.data(), ldc);
  auto dA = DeviceBuffer::from(A, DType::kF32), dB = DeviceBuffer::from(B, DType::kF32), dC = DeviceBuffer::from(C, DType::kF32);
  kg::GemmArgs g;
  g.trans_b = false, g.M = M, g.N = N, g.K = K, g.alpha = 0.5f, g.beta = 2.0f;
  g.A = dA.get(), g.lda = lda, g.B = dB.get(), g.ldb = ldb, g.C = dC.get(), g.ldc = ldc;
  blas.gemm(g, ws.get(), 32u << 20, nullptr);
  expect_close(dC.floats(DType::kF32), want, 1e-4, "gemm NN alpha/beta strided f32");
  EXPECT_GT(blas.cached_plans(), 0u);
}

// The 16-bit products at the row counts of a batch of 64 prompts of the demo model (hidden 256,
// FFN 1024; an odd M): the kernel cuBLASLt picks for large M is not the one of the shapes above.
// The same call twice must give the same bits (no race, no order-dependent reduction).
TEST_F(Gpu, GemmMatchesCpuAtLargeBatchRowCounts) {
  kg::Blas blas;
  DeviceBuffer ws(32u << 20);
  for (auto [M, K, N] : {std::tuple{4099, 256, 768}, {4099, 1024, 256}, {6400, 256, 1024}, {6400, 256, 512}}) {
    for (DType t : {DType::kF16, DType::kBF16}) {
      auto x = random_vec(size_t(M) * K, 11, -4.0f, 4.0f), w = random_vec(size_t(N) * K, 12, -0.1f, 0.1f);
      auto bias = random_vec(N, 13);
      round_to(x, t), round_to(w, t);
      std::vector<float> want(size_t(M) * N);
      kc::linear(x.data(), M, K, w.data(), nullptr, 0, bias.data(), N, want.data(), N);
      auto dx = DeviceBuffer::from(x, t), dw = DeviceBuffer::from(w, t), db = DeviceBuffer::from(bias, DType::kF32);
      DeviceBuffer dy(size_t(M) * N * 4), dy2(size_t(M) * N * 4);
      dy.poison(), dy2.poison();
      kg::GemmArgs g;
      g.M = M, g.N = N, g.K = K, g.A = dx.get(), g.lda = K, g.B = dw.get(), g.ldb = K, g.ab_type = t;
      g.C = dy.get(), g.ldc = N, g.c_type = DType::kF32, g.bias = db.get();
      blas.gemm(g, ws.get(), 32u << 20, nullptr);
      g.C = dy2.get();
      blas.gemm(g, ws.get(), 32u << 20, nullptr);
      const std::string what = "linear " + std::to_string(M) + "x" + std::to_string(K) + "->" + std::to_string(N) + " " +
                               name(t) + "->f32";
      const std::vector<float> got = dy.floats(DType::kF32);
      expect_close(got, want, tolerance(DType::kF32), what);
      EXPECT_EQ(std::memcmp(got.data(), dy2.floats(DType::kF32).data(), got.size() * 4), 0) << what << ": run twice, other bits";
    }
  }
}

// AlgoChoice::kPerBucket with 16-bit inputs: one heuristic call per bucket of row counts (asked
// for the bucket's M), every M of the bucket then matches the CPU, and an M's bits do not depend on
// which M of its bucket came first. kPerShape asks for each shape, and so does kPerBucket with F32
// inputs.
TEST_F(Gpu, GemmAsksTheHeuristicOncePerRowBucket) {
  DeviceBuffer ws(32u << 20);
  const int K = 768, N = 2304, kMaxM = 512;
  for (DType t : {DType::kF16, DType::kBF16, DType::kF32}) {
    auto x = random_vec(size_t(kMaxM) * K, 31), w = random_vec(size_t(N) * K, 32, -0.1f, 0.1f);
    auto bias = random_vec(N, 33);
    round_to(x, t), round_to(w, t), round_to(bias, t);
    auto dx = DeviceBuffer::from(x, t), dw = DeviceBuffer::from(w, t), db = DeviceBuffer::from(bias, t);
    // The product of the first M rows on `blas` (same buffers, so the same alignments).
    auto run = [&](kg::Blas& blas, int M) { return gpu_linear(blas, ws, dx, dw, db, M, N, K, t, t); };
    kg::Blas bucketed(kg::AlgoChoice::kPerBucket), exact(kg::AlgoChoice::kPerShape);
    const int rows[] = {300, 257, 511, 512, 400};  // all in the bucket of 512
    for (const int M : rows) {
      std::vector<float> want(size_t(M) * N);
      kc::linear(x.data(), M, K, w.data(), nullptr, 0, bias.data(), N, want.data(), N);
      const std::string what = "M=" + std::to_string(M) + " " + name(t);
      expect_close(run(bucketed, M), want, tolerance(t), what + " bucketed");
      expect_close(run(exact, M), want, tolerance(t), what + " per shape");
    }
    const size_t per_bucket = t == DType::kF32 ? std::size(rows) : 1;
    EXPECT_EQ(bucketed.heuristic_calls(), per_bucket) << name(t) << ": one bucket, one heuristic call (F32: per shape)";
    EXPECT_EQ(exact.heuristic_calls(), std::size(rows)) << name(t);
    EXPECT_EQ(bucketed.cached_plans(), std::size(rows));
    // M = 400 first on a fresh handle: the same bits as after the others.
    kg::Blas fresh(kg::AlgoChoice::kPerBucket);
    const std::vector<float> first = run(fresh, 400), after = run(bucketed, 400);
    EXPECT_EQ(std::memcmp(first.data(), after.data(), first.size() * 4), 0) << name(t) << ": order-dependent bits";
    // Another bucket, another call.
    run(bucketed, 100);
    EXPECT_EQ(bucketed.heuristic_calls(), per_bucket + 1) << name(t);
    // At most max_plans plans: then all go and are made again, with the same bits.
    kg::Blas small(kg::AlgoChoice::kPerBucket, 3);
    const std::vector<float> before = run(small, 300);
    for (const int M : rows) run(small, M);
    EXPECT_LE(small.cached_plans(), 3u) << name(t);
    const std::vector<float> remade = run(small, 300);
    EXPECT_EQ(std::memcmp(before.data(), remade.data(), before.size() * 4), 0) << name(t) << ": a plan made again";
  }
}

// cuBLASLt's GELU_BIAS epilogue (GemmArgs::gelu_tanh: the FFN up on 16-bit activations, ops::linear,
// CudaBackend::gelu_epilogue) at the model's FFN-up shape, 16 bits in and out, against the CPU
// product followed by the tanh form of GELU in double: tolerance(t) + 1e-3, as cuBLASLt's own
// evaluation of tanh is not documented (the hardware tanh.approx, 2^-11 relative, would give up to
// ~6.5e-4 near x = -2.7); and against the exact GELU with 4.7e-4 more (the forms' largest
// difference). Where the two forms differ by more than 1e-4, the mean distance of the result to
// each is printed (which form cuBLASLt computes, and how closely). The plain bias product of the same shape
// afterwards gets its own plan (the epilogue is in the plan key) and no GELU.
TEST_F(Gpu, GemmGeluEpilogueIsTheTanhFormOfGelu) {
  kg::Blas blas;
  DeviceBuffer ws(32u << 20);
  const int M = 300, K = 768, N = 3072;
  for (DType t : {DType::kF16, DType::kBF16}) {
    auto x = random_vec(size_t(M) * K, 21), w = random_vec(size_t(N) * K, 22, -0.15f, 0.15f);
    auto bias = random_vec(N, 23);
    round_to(x, t), round_to(w, t), round_to(bias, t);
    std::vector<float> pre(size_t(M) * N);
    kc::linear(x.data(), M, K, w.data(), nullptr, 0, bias.data(), N, pre.data(), N);
    std::vector<float> tanh_form(pre.size()), erf_form(pre.size());
    for (size_t i = 0; i < pre.size(); ++i) {
      const double v = pre[i];
      tanh_form[i] = static_cast<float>(0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))));
      erf_form[i] = static_cast<float>(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
    }
    auto dx = DeviceBuffer::from(x, t), dw = DeviceBuffer::from(w, t), db = DeviceBuffer::from(bias, t);
    DeviceBuffer dy(size_t(M) * N * dtype_size(t)), dplain(size_t(M) * N * dtype_size(t));
    dy.poison(), dplain.poison();
    kg::GemmArgs g;
    g.M = M, g.N = N, g.K = K, g.A = dx.get(), g.lda = K, g.B = dw.get(), g.ldb = K, g.ab_type = t;
    g.C = dy.get(), g.ldc = N, g.c_type = t, g.bias = db.get(), g.gelu_tanh = true;
    blas.gemm(g, ws.get(), 32u << 20, nullptr);
    const std::vector<float> got = dy.floats(t);
    const std::string what = std::string("linear+gelu epilogue ") + name(t);
    expect_close(got, tanh_form, tolerance(t) + 1e-3, what + " vs tanh form");
    expect_close(got, erf_form, tolerance(t) + 1.5e-3, what + " vs erf");
    double to_tanh = 0, to_erf = 0;
    size_t differing = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::abs(double(tanh_form[i]) - erf_form[i]) <= 1e-4) continue;
      ++differing;
      to_tanh += std::abs(double(got[i]) - tanh_form[i]);
      to_erf += std::abs(double(got[i]) - erf_form[i]);
    }
    ASSERT_GT(differing, 0u);
    std::printf("  %s: where the forms differ by > 1e-4 (%zu values): mean |got - tanh form| %.3g, mean |got - erf| %.3g\n",
                name(t), differing, to_tanh / double(differing), to_erf / double(differing));
    const size_t plans = blas.cached_plans();
    g.C = dplain.get(), g.gelu_tanh = false;
    blas.gemm(g, ws.get(), 32u << 20, nullptr);
    EXPECT_EQ(blas.cached_plans(), plans + 1) << what << ": the plain product reused the GELU plan";
    expect_close(dplain.floats(t), pre, tolerance(t), std::string("linear (bias only) after it ") + name(t));
  }
}

TEST_F(Gpu, LayerNormWithResidualMatchesCpu) {
  // One warp per row with 16-byte accesses where cols % 8 == 0 and <= 1024 (768: 3 chunks of 8 per
  // lane; 128, 264, 776: lanes without a chunk or with one more; 1024: 4 full), the scalar warp
  // kernel otherwise (100; and every width with the tensors one element off 16-byte alignment),
  // one block per row past 1024 (1536). 301 rows: the last block of 4 warps has 1 row.
  const int rows = 301;
  for (const int cols : {768, 100, 1536, 128, 264, 776, 1024}) {
    auto gamma = random_vec(cols, 7, 0.5f, 1.5f), beta = random_vec(cols, 8);
    auto dg = DeviceBuffer::from(gamma), dbeta = DeviceBuffer::from(beta);
    for (DType t : kTypes) {
      for (const int off : {0, 1}) {
        for (bool with_residual : {true, false}) {
          auto x = random_vec(size_t(rows) * cols + off, 9, -3.0f, 5.0f), r = random_vec(size_t(rows) * cols + off, 10);
          round_to(x, t), round_to(r, t);
          std::vector<float> want(x.begin() + off, x.end());
          kc::layer_norm(x.data() + off, with_residual ? r.data() + off : nullptr, gamma.data(), beta.data(), 1e-7f,
                         rows, cols, want.data());
          auto dx = DeviceBuffer::from(x, t), dr = DeviceBuffer::from(r, t);
          char* xs = dx.get<char>() + off * dtype_size(t);
          // y aliases x, as the encoder calls it.
          kg::layer_norm(t, t, xs, with_residual ? dr.get<char>() + off * dtype_size(t) : nullptr, dg.get<float>(),
                         dbeta.get<float>(), 1e-7f, rows, cols, xs, nullptr);
          const std::vector<float> all = dx.floats(t);
          expect_close(std::vector<float>(all.begin() + off, all.end()), want, tolerance(t),
                       std::string("layer_norm ") + (with_residual ? "+residual " : "") + name(t) + " cols " +
                           std::to_string(cols) + (off ? " unaligned" : ""));
        }
      }
    }
  }
}

// The embeddings' layer norm at 16-bit activations: fp32 x (+ residual) in, y stored in 16 bits
// (the encoder's first 16-bit activation). The CPU sees the same fp32 inputs: only y's rounding differs.
TEST_F(Gpu, LayerNormFromF32IntoSixteenBits) {
  const int rows = 70, cols = 768;
  auto gamma = random_vec(cols, 70, 0.5f, 1.5f), beta = random_vec(cols, 71);
  auto x = random_vec(size_t(rows) * cols, 72, -3.0f, 5.0f), r = random_vec(size_t(rows) * cols, 73);
  auto dg = DeviceBuffer::from(gamma), dbeta = DeviceBuffer::from(beta);
  auto dx = DeviceBuffer::from(x, DType::kF32), dr = DeviceBuffer::from(r, DType::kF32);
  std::vector<float> want(x.size());
  kc::layer_norm(x.data(), r.data(), gamma.data(), beta.data(), 1e-7f, rows, cols, want.data());
  for (DType t : {DType::kF16, DType::kBF16}) {
    DeviceBuffer dy(x.size() * dtype_size(t));
    dy.poison();
    kg::layer_norm(DType::kF32, t, dx.get(), dr.get(), dg.get<float>(), dbeta.get<float>(), 1e-7f, rows, cols,
                   dy.get(), nullptr);
    expect_close(dy.floats(t), want, tolerance(t), std::string("layer_norm f32 -> ") + name(t));
  }
  // A 16-bit x with an F32 y is not a combination the encoder has: refused.
  EXPECT_THROW(kg::layer_norm(DType::kF16, DType::kF32, dx.get(), nullptr, dg.get<float>(), dbeta.get<float>(), 1e-7f,
                              rows, cols, dx.get(), nullptr),
               Error);
}

// layer_norm's row maps against the CPU kernel with the same maps: x's rows gathered by x_rows
// (the embeddings' layer norm: the F32 word table into every storage type) and rows with keep 0
// written as zeros (the conv block's: in place, with a residual), in each kernel (768, 264:
// 16-byte accesses; 100: scalar warp per row; 1536: block per row). 301 rows (the last block of 4
// warps has 1 row, masked), a third of them masked. The kept rows: the bits of the plain kernel.
TEST_F(Gpu, LayerNormGatheredAndMaskedRowsMatchCpu) {
  const int rows = 301, table_rows = 50;
  std::vector<int32_t> ids(rows);
  std::vector<uint8_t> keep(rows);
  std::mt19937 rng(80);
  for (int r = 0; r < rows; ++r) {
    ids[r] = static_cast<int32_t>(rng() % table_rows);
    keep[r] = rng() % 3 != 0;
  }
  keep[0] = 0, keep[rows - 1] = 0, ids[1] = table_rows - 1;
  auto dids = DeviceBuffer::from(ids), dkeep = DeviceBuffer::from(keep);
  for (const int cols : {768, 264, 100, 1536}) {
    auto gamma = random_vec(cols, 81, 0.5f, 1.5f), beta = random_vec(cols, 82);
    auto dg = DeviceBuffer::from(gamma), dbeta = DeviceBuffer::from(beta);
    const auto table = random_vec(size_t(table_rows) * cols, 83, -2.0f, 2.0f);
    auto dtable = DeviceBuffer::from(table, DType::kF32);
    std::vector<float> want_gathered(size_t(rows) * cols);
    kc::layer_norm(table.data(), nullptr, gamma.data(), beta.data(), 1e-7f, rows, cols, want_gathered.data(),
                   ids.data());
    for (DType t : kTypes) {
      const std::string what = std::string(name(t)) + " cols " + std::to_string(cols);
      DeviceBuffer dy(size_t(rows) * cols * dtype_size(t));
      dy.poison();
      kg::layer_norm(DType::kF32, t, dtable.get(), nullptr, dg.get<float>(), dbeta.get<float>(), 1e-7f, rows, cols,
                     dy.get(), nullptr, dids.get<int32_t>());
      expect_close(dy.floats(t), want_gathered, tolerance(t), "layer_norm gathered f32 -> " + what);

      auto x = random_vec(size_t(rows) * cols, 84, -3.0f, 5.0f), r = random_vec(size_t(rows) * cols, 85);
      round_to(x, t), round_to(r, t);
      std::vector<float> want(x.size());
      kc::layer_norm(x.data(), r.data(), gamma.data(), beta.data(), 1e-7f, rows, cols, want.data(), nullptr,
                     keep.data());
      auto dx = DeviceBuffer::from(x, t), dplain = DeviceBuffer::from(x, t), dr = DeviceBuffer::from(r, t);
      kg::layer_norm(t, t, dx.get(), dr.get(), dg.get<float>(), dbeta.get<float>(), 1e-7f, rows, cols, dx.get(), nullptr,
                     nullptr, dkeep.get<uint8_t>());
      kg::layer_norm(t, t, dplain.get(), dr.get(), dg.get<float>(), dbeta.get<float>(), 1e-7f, rows, cols, dplain.get(),
                     nullptr);
      const std::vector<float> got = dx.floats(t), plain = dplain.floats(t);
      expect_close(got, want, tolerance(t), "layer_norm masked in place " + what);
      for (int row = 0; row < rows; ++row)
        for (int c = 0; c < cols; ++c) {
          const size_t i = size_t(row) * cols + c;
          if (keep[row]) {
            ASSERT_EQ(got[i], plain[i]) << what << " row " << row << " col " << c;
          } else {
            ASSERT_TRUE(got[i] == 0.0f && !std::signbit(got[i])) << what << " masked row " << row << ": " << got[i];
          }
        }
    }
  }
}

// Storage conversions (ops::copy between activation types, weights at load, the link head's input
// and the hidden states read back): to 16 bits rounded to nearest even, back to F32 exactly; zeroing
// masked rows in every storage type.
TEST_F(Gpu, ConvertRoundsToNearestAndWidensExactly) {
  auto x = random_vec(100003, 74, -70000.0f, 70000.0f);
  for (size_t i = 0; i < 1000; ++i) x[i] *= 1e-6f;  // small magnitudes (fp16 subnormals) too
  auto dx = DeviceBuffer::from(x, DType::kF32);
  for (DType t : {DType::kF16, DType::kBF16}) {
    std::vector<float> want = x;
    round_to(want, t);
    DeviceBuffer narrow(x.size() * dtype_size(t)), wide(x.size() * 4), same(x.size() * dtype_size(t));
    narrow.poison(), wide.poison(), same.poison();
    kg::convert(DType::kF32, dx.get(), t, narrow.get(), x.size(), nullptr);
    kg::convert(t, narrow.get(), DType::kF32, wide.get(), x.size(), nullptr);
    kg::convert(t, narrow.get(), t, same.get(), x.size(), nullptr);
    const std::vector<float> got = wide.floats(DType::kF32), copied = same.floats(t);
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(got[i], want[i]) << name(t) << " at " << i << ": " << x[i];  // past 65504: inf in fp16
      ASSERT_EQ(copied[i], want[i]) << name(t) << " copy at " << i;
    }
  }
}

TEST_F(Gpu, ZeroRowsInEveryStorageType) {
  const int rows = 6, width = 40;
  const std::vector<uint8_t> keep = {1, 0, 0, 1, 1, 0};
  auto dk = DeviceBuffer::from(keep);
  for (DType t : kTypes) {
    auto x = random_vec(size_t(rows) * width, 75, 0.5f, 2.0f);
    round_to(x, t);
    auto dx = DeviceBuffer::from(x, t);
    kg::zero_rows(t, dx.get(), dk.get<uint8_t>(), rows, width, nullptr);
    const std::vector<float> got = dx.floats(t);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < width; ++c)
        ASSERT_EQ(got[size_t(r) * width + c], keep[r] ? x[size_t(r) * width + c] : 0.0f) << name(t) << " row " << r;
  }
}

// The flash kernel's mask bits made on the device (ops::pack_sequences where no caller brings them):
// each mask's bytes as bits at its own offset, the other bits zero (words poisoned first), for masks
// back to back (words two masks share) and with gaps of nonzero bytes between them (never packed).
TEST_F(Gpu, PackMaskBitsGivesEachMaskBitsAtItsOffset) {
  const Batch batch({1, 5, 33, 40, 7, 64}, 91);
  for (const int gap : {0, 7}) {
    std::vector<uint8_t> bytes;
    std::vector<int64_t> mask_offsets;
    std::vector<uint8_t> want;  // the bytes the bits must give: the masks', zeros in the gaps
    for (int b = 0; b < batch.size(); ++b) {
      bytes.insert(bytes.end(), gap, 0x5A), want.insert(want.end(), gap, 0);
      mask_offsets.push_back(static_cast<int64_t>(bytes.size()));
      const auto m = batch.masks.begin() + batch.mask_offsets[b];
      const ptrdiff_t n = static_cast<ptrdiff_t>(batch.length(b)) * batch.length(b);
      bytes.insert(bytes.end(), m, m + n), want.insert(want.end(), m, m + n);
    }
    DeviceBatchBuffers db(batch);
    auto dbytes = DeviceBuffer::from(bytes);
    auto doffsets = DeviceBuffer::from(mask_offsets);
    kg::DeviceBatch view = db.view;
    view.masks = dbytes.get<uint8_t>(), view.mask_offsets = doffsets.get<int64_t>();
    view.mask_span = static_cast<int64_t>(bytes.size()), view.mask_bits = nullptr;
    ASSERT_EQ(kg::mask_bits_words(view), (bytes.size() + 31) / 32);
    DeviceBuffer words(kg::mask_bits_words(view) * sizeof(uint32_t));
    words.poison();
    kg::pack_mask_bits(view, words.get<uint32_t>(), nullptr);
    std::vector<uint32_t> got(kg::mask_bits_words(view));
    kg::check(cudaDeviceSynchronize(), "sync");
    kg::check(cudaMemcpy(got.data(), words.get(), got.size() * sizeof(uint32_t), cudaMemcpyDeviceToHost), "download");
    EXPECT_EQ(got, bits_of(want)) << "gap " << gap;
  }
}

TEST_F(Gpu, MaskedSoftmaxMatchesCpuIncludingFullyMaskedRows) {
  const int rows = 128, cols = 200, ld = 256;
  auto s = random_vec(size_t(rows) * ld, 11, -8.0f, 8.0f);
  std::vector<uint8_t> mask(size_t(rows) * cols);
  std::mt19937 rng(12);
  for (auto& m : mask) m = rng() % 3 != 0;
  std::fill_n(mask.begin() + 5 * cols, cols, 0);  // row 5 fully masked -> zeros
  std::vector<float> want = s;
  kc::masked_softmax(want.data(), rows, cols, ld, mask.data(), cols);
  auto ds = DeviceBuffer::from(s, DType::kF32);
  auto dm = DeviceBuffer::from(mask);
  kg::masked_softmax(ds.get<float>(), rows, cols, ld, dm.get<uint8_t>(), cols, nullptr);
  expect_close(ds.floats(DType::kF32), want, 1e-4, "masked_softmax f32");
}

// 16-byte vectors where the buffer allows them (300 x 3072 values), scalar otherwise: an odd
// count, and the same buffer from its second value (not 16-byte aligned).
TEST_F(Gpu, GeluErfMatchesCpu) {
  for (DType t : kTypes) {
    for (const size_t n : {size_t(300) * 3072, size_t(10007)}) {
      for (const size_t skip : {size_t(0), size_t(1)}) {
        auto x = random_vec(n, 13, -6.0f, 6.0f);
        round_to(x, t);
        std::vector<float> want = x;
        kc::gelu_erf(want.data() + skip, want.size() - skip);
        auto dx = DeviceBuffer::from(x, t);
        kg::gelu_erf(t, static_cast<char*>(dx.get()) + skip * rexnlu::dtype_size(t), x.size() - skip, nullptr);
        expect_close(dx.floats(t), want, tolerance(t),
                     std::string("gelu_erf ") + name(t) + " n=" + std::to_string(n) + " from " + std::to_string(skip));
      }
    }
  }
}

TEST_F(Gpu, RotaryMatchesCpuAtAllPositions) {
  const int rows = 512, dim = 768, ld = 1536;
  auto x = random_vec(size_t(rows) * ld, 14, -3.0f, 3.0f);
  std::vector<int32_t> pos(rows);
  std::iota(pos.begin(), pos.end(), 0);
  std::vector<float> freqs(dim / 2);
  for (int m = 0; m < dim / 2; ++m) freqs[m] = 1.0f / std::pow(10000.0f, float(2 * m) / float(dim));
  std::vector<float> want = x;
  // The CPU turns q and k one group at a time; the GPU both groups in one launch.
  kc::rotary_interleaved(want.data(), rows, dim, 1, ld, pos.data(), freqs.data());
  kc::rotary_interleaved(want.data() + dim, rows, dim, 1, ld, pos.data(), freqs.data());
  auto dx = DeviceBuffer::from(x, DType::kF32);
  auto dp = DeviceBuffer::from(pos), df = DeviceBuffer::from(freqs);
  kg::rotary_interleaved(dx.get<float>(), rows, dim, 2, ld, dp.get<int32_t>(), df.get<float>(), nullptr);
  expect_close(dx.floats(DType::kF32), want, 1e-5, "rotary_interleaved f32 (q|k in 2 groups, pos 0..511)");
}

// One conv1d_k3 case at storage type t over a packed batch: x (random, x_seed) and the weights
// rounded to t, the CPU kernel's output per sequence (with the Rex conv block's epilogue where keep
// is given: rows with keep 0 zero, the exact GELU), and x and the taps on the device for
// taps_product(), which conv1d_k3_combine reads.
struct ConvK3Case {
  std::vector<float> want;
  DeviceBuffer x, taps;
  int rows, H;
  DType t;
  // x · taps^T on the device: [rows, 3H] of c_type.
  DeviceBuffer taps_product(DType c_type) const {
    DeviceBuffer out(size_t(rows) * 3 * H * dtype_size(c_type));
    kg::Blas blas;
    DeviceBuffer ws(32u << 20);
    kg::GemmArgs g;
    g.M = rows, g.N = 3 * H, g.K = H, g.A = x.get(), g.lda = H, g.B = taps.get(), g.ldb = H;
    g.ab_type = t, g.C = out.get(), g.ldc = 3 * H, g.c_type = c_type;
    blas.gemm(g, ws.get(), 32u << 20, nullptr);
    kg::check(cudaDeviceSynchronize(), "conv1d_k3 taps");  // before the workspace goes
    return out;
  }
};
ConvK3Case conv_k3_case(const Batch& batch, int H, const std::vector<float>& w, const std::vector<float>& bias,
                        uint32_t x_seed, DType t, const std::vector<uint8_t>& keep = {}) {
  auto x = random_vec(size_t(batch.rows) * H, x_seed);
  round_to(x, t);
  auto wt = w;
  round_to(wt, t);
  const std::vector<float> taps = conv1d_taps(wt.data(), H, H);
  std::vector<float> want(x.size());
  for (int b = 0; b < batch.size(); ++b) {
    const size_t row0 = size_t(batch.offsets[b]);
    kc::conv1d_k3(x.data() + row0 * H, batch.length(b), H, taps.data(), bias.data(), H, want.data() + row0 * H,
                  keep.empty() ? nullptr : keep.data() + row0, !keep.empty());
  }
  return {std::move(want), DeviceBuffer::from(x, t), DeviceBuffer::from(taps, t), batch.rows, H, t};
}

TEST_F(Gpu, Conv1dK3MatchesCpuPerSequence) {
  const int H = 768;
  const Batch batch({1, 57, 128, 2}, 15);
  auto w = random_vec(size_t(H) * H * 3, 16, -0.05f, 0.05f);
  auto bias = random_vec(H, 17);
  DeviceBatchBuffers db(batch);
  auto dbias = DeviceBuffer::from(bias);
  for (DType t : kTypes) {
    // The taps' product in t, and at 16 bits also as ops::conv1d_k3 runs it on 16-bit activations:
    // the products kept in fp32, y rounded once.
    const ConvK3Case c = conv_k3_case(batch, H, w, bias, 18, t);
    for (DType c_type : t == DType::kF32 ? std::vector<DType>{t} : std::vector<DType>{t, DType::kF32}) {
      const DeviceBuffer taps_out = c.taps_product(c_type);
      DeviceBuffer dy(size_t(batch.rows) * H * dtype_size(t));
      dy.poison();
      kg::conv1d_k3_combine(c_type, t, taps_out.get(), db.view, H, dbias.get<float>(), dy.get(), nullptr);
      expect_close(dy.floats(t), c.want, tolerance(t),
                   std::string(c_type == t ? "conv1d_k3 (gemm + combine) " : "conv1d_k3 (gemm to f32 + combine) ") +
                       name(t));
    }
  }
}

// The combining kernel's epilogue (the Rex conv block: row mask + exact GELU, one launch where
// there were three) over a packed batch of odd lengths and a 1-token sequence, as ops::conv1d_k3
// runs it (the taps of 16-bit x kept in fp32, y rounded once; F32 alike), against the CPU kernel
// with the same epilogue; and bit for bit the combine, zero_rows and gelu_erf kernels one after
// another (the GELU reads y as rounded to its type).
TEST_F(Gpu, Conv1dK3MaskAndGeluEpilogueMatchesCpuAndTheUnfusedKernels) {
  const int H = 768;
  const Batch batch({1, 57, 128, 2, 33}, 91);
  std::vector<uint8_t> keep(batch.rows);
  std::mt19937 rng(92);
  for (auto& k : keep) k = rng() % 4 != 0;
  keep[0] = 0, keep[1] = 0, keep[batch.rows - 1] = 0;  // the 1-token sequence, the next one's first row, the last row
  auto w = random_vec(size_t(H) * H * 3, 93, -0.05f, 0.05f);
  auto bias = random_vec(H, 94);
  DeviceBatchBuffers db(batch);
  auto dkeep = DeviceBuffer::from(keep), dbias = DeviceBuffer::from(bias);
  for (DType t : kTypes) {
    const ConvK3Case c = conv_k3_case(batch, H, w, bias, 95, t, keep);
    const DeviceBuffer taps_out = c.taps_product(DType::kF32);
    DeviceBuffer dy(size_t(batch.rows) * H * dtype_size(t)), dunfused(size_t(batch.rows) * H * dtype_size(t));
    dy.poison(), dunfused.poison();
    kg::conv1d_k3_combine(DType::kF32, t, taps_out.get(), db.view, H, dbias.get<float>(), dy.get(), nullptr,
                          dkeep.get<uint8_t>(), true);
    kg::conv1d_k3_combine(DType::kF32, t, taps_out.get(), db.view, H, dbias.get<float>(), dunfused.get(), nullptr);
    kg::zero_rows(t, dunfused.get(), dkeep.get<uint8_t>(), batch.rows, H, nullptr);
    kg::gelu_erf(t, dunfused.get(), size_t(batch.rows) * H, nullptr);
    const std::vector<float> got = dy.floats(t), unfused = dunfused.floats(t);
    // 16 bits: y rounded, then its GELU rounded again (the CPU's GELU reads the fp32 sum).
    expect_close(got, c.want, 2 * tolerance(t), std::string("conv1d_k3 + mask + gelu ") + name(t));
    for (int r = 0; r < batch.rows; ++r)
      for (int o = 0; o < H; ++o) {
        const size_t i = size_t(r) * H + o;
        if (keep[r]) {
          ASSERT_EQ(got[i], unfused[i]) << name(t) << " row " << r << " col " << o;
        } else {
          ASSERT_TRUE(got[i] == 0.0f && !std::signbit(got[i])) << name(t) << " masked row " << r << ": " << got[i];
        }
      }
  }
}

// The CPU kernel's output for qkv ([rows, 3*H]: q|k|v) and rel ([rel_rows, 2*H]: Qr|Kr).
std::vector<float> attention_on_cpu(const Batch& batch, int heads, int head_dim, const std::vector<float>& qkv,
                                    const std::vector<float>& rel, int rel_rows) {
  const int H = heads * head_dim;
  const float scale = std::sqrt(static_cast<float>(head_dim) * 3.0f);
  std::vector<float> want(size_t(batch.rows) * H);
  std::vector<float> scratch(kc::disentangled_attention_scratch_floats(batch.max_len, head_dim, rel_rows));
  for (int b = 0; b < batch.size(); ++b) {
    const size_t row0 = batch.offsets[b];
    kc::DisentangledAttentionArgs a;
    a.length = batch.length(b), a.num_heads = heads, a.head_dim = head_dim;
    a.q = qkv.data() + row0 * 3 * H, a.k = a.q + H, a.v = a.q + 2 * H, a.ld_qkv = 3 * H;
    a.q_rel = rel.data(), a.k_rel = rel.data() + H, a.ld_rel = 2 * H, a.rel_rows = rel_rows;
    a.position_ids = batch.positions.data() + row0;
    a.mask = batch.masks.data() + batch.mask_offsets[b];
    a.scale = scale, a.out = want.data() + row0 * H, a.ld_out = H;
    a.scratch = scratch.data(), a.scratch_floats = scratch.size();
    kc::disentangled_attention(a);
  }
  return want;
}

// The attention's arguments over the test's device buffers: q|k|v interleaved per row (ld 3H),
// Qr|Kr per relative row (ld 2H), out [rows, H], all of type t and computed in `compute`.
kg::AttentionArgs attention_args(const DeviceBatchBuffers& db, int heads, int head_dim, DType t, DType compute,
                                 const DeviceBuffer& qkv, const DeviceBuffer& rel, int rel_rows, const DeviceBuffer& out) {
  const int H = heads * head_dim;
  kg::AttentionArgs a;
  a.type = t, a.compute = compute, a.batch = db.view, a.num_heads = heads, a.head_dim = head_dim;
  a.q = qkv.get(), a.k = qkv.get<char>() + H * dtype_size(t), a.v = qkv.get<char>() + 2 * H * dtype_size(t);
  a.ld_qkv = 3 * H, a.q_rel = rel.get(), a.k_rel = rel.get<char>() + H * dtype_size(t), a.ld_rel = 2 * H;
  a.rel_rows = rel_rows, a.scale = std::sqrt(static_cast<float>(head_dim) * 3.0f), a.out = out.get(), a.ld_out = H;
  return a;
}

// q|k|v in one [rows, 3*H] buffer and Qr|Kr in one [rel_rows, 2*H] buffer, as the encoder holds them.
// compute F16/BF16: a tensor-core kernel, `kernel` (attention_mma.cu, or attention_fa.cu for
// 16-bit storage computed in its type), which must be the one that runs here (sm_80+); the CPU
// sees the inputs rounded to that type, and the tolerance doubles for the one extra rounding of
// the probabilities before P·V.
void check_attention(const Batch& batch, int heads, int head_dim, DType t, const std::string& what,
                     DType compute = DType::kF32, kg::TensorCoreKernel kernel = kg::TensorCoreKernel::kWmma) {
  const int H = heads * head_dim, rel_rows = 512;
  auto qkv = random_vec(size_t(batch.rows) * 3 * H, 19, -2.0f, 2.0f);
  auto rel = random_vec(size_t(rel_rows) * 2 * H, 20, -2.0f, 2.0f);
  round_to(qkv, t), round_to(rel, t);
  round_to(qkv, compute), round_to(rel, compute);
  const std::vector<float> want = attention_on_cpu(batch, heads, head_dim, qkv, rel, rel_rows);
  DeviceBatchBuffers db(batch);
  auto dqkv = DeviceBuffer::from(qkv, t), drel = DeviceBuffer::from(rel, t);
  DeviceBuffer dout(size_t(batch.rows) * H * dtype_size(t));
  kg::AttentionArgs a = attention_args(db, heads, head_dim, t, compute, dqkv, drel, rel_rows, dout);
  if (compute == DType::kF32) {
    dout.poison();
    kg::disentangled_attention(a, nullptr);
    expect_close(dout.floats(t), want, tolerance(t), what + " " + name(t));
    return;
  }
  const double tol = 2 * std::max(tolerance(t), tolerance(compute));
  if (kernel == kg::TensorCoreKernel::kFlash) {
    // Dispatched at head_dim 64 only (attention_fa_supported: 16 is run directly here, the
    // dispatch gives it to the WMMA kernel).
    ASSERT_EQ(kg::attention_fa_supported(a), head_dim == 64) << what;
    // Both block shapes whatever the grid size (64 query rows x 32-key chunks; 16 rows with the
    // 64-key chunks split between the warps, merged at the end), unsplit (1 part: the key split
    // is check_flash_split's), each twice: the same bits.
    for (int rows : {64, 16}) {
      const std::string label = what + " " + name(t) + " fa rows " + std::to_string(rows);
      dout.poison();
      kg::disentangled_attention_fa(a, nullptr, rows, 1);
      const std::vector<float> got = dout.floats(t);
      expect_close(got, want, tol, label);
      dout.poison();
      kg::disentangled_attention_fa(a, nullptr, rows, 1);
      EXPECT_EQ(std::memcmp(got.data(), dout.floats(t).data(), got.size() * 4), 0) << label << ": run twice, other bits";
      // Runs of contiguous positions gathered through shared memory like the rest: the same bits.
      kg::AttentionArgs no_shuffle = a;
      no_shuffle.fa_shuffle = false;
      dout.poison();
      kg::disentangled_attention_fa(no_shuffle, nullptr, rows, 1);
      expect_bits_equal(got, dout.floats(t), label + " shuffles off");
    }
    // The dispatch runs it (tensor cores wherever supported, the flash kernel; WMMA at head_dim 16),
    // with the key split's workspace where the grid splits (AttentionArgs::fa_split kAuto, the default).
    a.tensor_cores = 1;
    a.tc_kernel = kernel;
    ASSERT_TRUE(kg::attention_uses_tensor_cores(a)) << what;
    DeviceBuffer split_ws(kg::attention_fa_workspace_bytes(a));
    a.fa_workspace = split_ws.get(), a.fa_workspace_bytes = split_ws.size();
    dout.poison();
    kg::disentangled_attention(a, nullptr);
    expect_close(dout.floats(t), want, tol, what + " " + name(t) + (head_dim == 64 ? " fa" : " wmma") + " via disentangled_attention");
    return;
  }
  ASSERT_TRUE(kg::attention_mma_supported(a)) << what;
  // Both block shapes whatever the grid size: 64 query rows x all keys, and 16 rows with the keys
  // split between the 4 warps (merged at the end).
  for (int key_groups : {1, 4}) {
    dout.poison();
    kg::disentangled_attention_mma(a, nullptr, key_groups);
    expect_close(dout.floats(t), want, tol,
                 what + " " + name(t) + " mma " + name(compute) + " key_groups " + std::to_string(key_groups));
  }
}

// The tensor-core kernel: 16-bit storage, and fp32 storage (the encoder's activations) rounded
// when staged; the prompt batch (positions restart: several relative windows per tile) and
// L = 512 (one window per tile, clamped indices).
TEST_F(Gpu, DisentangledAttentionTensorCoresMatchCpu) {
  const Batch prompt({128, 77, 1, 200, 33}, 21), long_one({512}, 22, Positions::kContiguous);
  for (DType c : {DType::kF16, DType::kBF16}) {
    for (DType t : {c, DType::kF32}) {
      check_attention(prompt, 12, 64, t, "attention 12x64 L=128,77,1,200,33", c);
      check_attention(long_one, 12, 64, t, "attention 12x64 L=512 pos 0..511", c);
    }
  }
}

// A batch like the demo model's at batch 64 (4 heads x 64, 64 prompts of 17..130 tokens): the
// dispatch picks the tensor-core kernel in 16-bit compute (its grid fills the GPU). Against the CPU,
// and five launches of the same call must give the same bits: the kernels have no atomics, so a
// difference is a race (a nondeterministic GPU answer on the demo model, docs/accuracy.md).
TEST_F(Gpu, DisentangledAttentionIsDeterministicAtDemoBatchShapes) {
  std::vector<int> lengths;
  std::mt19937 rng(31);
  for (int b = 0; b < 64; ++b) lengths.push_back(17 + static_cast<int>(rng() % 114));
  const Batch batch(lengths, 32);
  for (DType c : {DType::kF32, DType::kF16, DType::kBF16}) {
    check_attention(batch, 4, 64, DType::kF32, "attention 4x64 64 prompts", c);
    const int H = 4 * 64, rel_rows = 512;
    auto qkv = random_vec(size_t(batch.rows) * 3 * H, 33, -3.0f, 3.0f), rel = random_vec(size_t(rel_rows) * 2 * H, 34, -3.0f, 3.0f);
    DeviceBatchBuffers db(batch);
    auto dqkv = DeviceBuffer::from(qkv, DType::kF32), drel = DeviceBuffer::from(rel, DType::kF32);
    kg::AttentionArgs a;
    a.type = DType::kF32, a.compute = c, a.batch = db.view, a.num_heads = 4, a.head_dim = 64;
    a.q = dqkv.get(), a.k = dqkv.get<float>() + H, a.v = dqkv.get<float>() + 2 * H, a.ld_qkv = 3 * H;
    a.q_rel = drel.get(), a.k_rel = drel.get<float>() + H, a.ld_rel = 2 * H, a.rel_rows = rel_rows;
    a.scale = std::sqrt(64.0f * 3.0f), a.ld_out = H;
    if (c != DType::kF32) {
      EXPECT_TRUE(kg::attention_uses_tensor_cores(a)) << name(c);
    }
    std::vector<float> first;
    for (int run = 0; run < 5; ++run) {
      DeviceBuffer dout(size_t(batch.rows) * H * 4);
      dout.poison();
      a.out = dout.get();
      kg::disentangled_attention(a, nullptr);
      const std::vector<float> got = dout.floats(DType::kF32);
      if (run == 0) {
        first = got;
      } else {
        EXPECT_EQ(std::memcmp(got.data(), first.data(), got.size() * 4), 0) << name(c) << ": run " << run << " gave other bits";
      }
    }
  }
}

// The flash kernel (16-bit storage computed in its type), both block shapes: restarting,
// contiguous (L = 512: indices clamped) and scattered positions (beyond rel_rows, not monotonic:
// windows wider than one per chunk), block-structured masks with a fully masked row, lengths
// that are not multiples of 16 / 32 / 64, several sequences of different lengths per batch;
// head_dim 64 (16: DisentangledAttentionFlashHeadDim16). Unsplit, then through the dispatch with
// the automatic key split (the 128- and 512-token sequences alone split where the GPU has more SMs
// than their 64-row blocks: ops.h).
TEST_F(Gpu, DisentangledAttentionFlashMatchesCpu) {
  const auto fa = kg::TensorCoreKernel::kFlash;
  const Batch prompt({128, 77, 1, 200, 33}, 21), long_one({512}, 22, Positions::kContiguous);
  const Batch odd({17, 63, 65, 129, 191, 2}, 26, Positions::kContiguous), scattered({97, 64, 250, 3, 130}, 27, Positions::kScattered);
  for (DType c : {DType::kF16, DType::kBF16}) {
    check_attention(prompt, 12, 64, c, "attention 12x64 L=128,77,1,200,33", c, fa);
    check_attention(long_one, 12, 64, c, "attention 12x64 L=512 pos 0..511", c, fa);
    check_attention(odd, 4, 64, c, "attention 4x64 L=17,63,65,129,191,2 contiguous", c, fa);
    check_attention(scattered, 4, 64, c, "attention 4x64 L=97,64,250,3,130 scattered", c, fa);
  }
}

// One batch shape of the model-shape tests: sequence lengths, how positions run, a label.
struct ShapeCase {
  std::vector<int> lengths;
  Positions positions;
  const char* what;
};

// Whether the flash kernel runs on this device at the model's head_dim (sm_80+ with its shared memory).
bool flash_kernel_runs() {
  kg::AttentionArgs a;
  a.type = a.compute = DType::kF16, a.head_dim = 64;
  return kg::attention_fa_supported(a);
}

// The key split (AttentionArgs::fa_split: each row block's keys over several blocks, their
// partial (max, sum, O) merged by a second kernel): other bits than the unsplit kernel (another
// summation order; P rounded against each part's own max), so against the CPU with the flash
// kernel's tolerance (check_attention), within the 16-bit type's tolerance of the unsplit kernel,
// rows without a kept key (row 2 of every sequence longer than 3) exactly zero, and the same bits
// when run twice. Both block shapes, 2 and 4 parts forced and the automatic pick (4 parts of the
// 64-row shape where its grid has fewer blocks than SMs and the longest sequence more than 96
// tokens, else 1: then the unsplit kernel's bits);
// then the dispatch with the workspace (same bits as the direct call by grid), without it (throws
// where it splits), and with fa_split kOff (no workspace, the unsplit kernel's bits). The
// unsplit kernel runs first, both shapes and the grid's pick: the racecheck step of
// scripts/fa_gpu.sh covers it through this check too.
void check_flash_split(const Batch& batch, int heads, const std::string& what, uint32_t seed) {
  const int head_dim = 64, H = heads * head_dim, rel_rows = 512;
  DeviceBatchBuffers db(batch);
  for (DType t : {DType::kF16, DType::kBF16}) {
    auto qkv = random_vec(size_t(batch.rows) * 3 * H, seed++, -2.0f, 2.0f);
    auto rel = random_vec(size_t(rel_rows) * 2 * H, seed++, -2.0f, 2.0f);
    round_to(qkv, t), round_to(rel, t);
    const std::vector<float> want = attention_on_cpu(batch, heads, head_dim, qkv, rel, rel_rows);
    auto dqkv = DeviceBuffer::from(qkv, t), drel = DeviceBuffer::from(rel, t);
    DeviceBuffer dout(size_t(batch.rows) * H * dtype_size(t));
    kg::AttentionArgs a = attention_args(db, heads, head_dim, t, t, dqkv, drel, rel_rows, dout);
    ASSERT_TRUE(kg::attention_fa_supported(a)) << what;
    const double tol = 2 * tolerance(t);
    {  // the automatic pick (ops.h): 4 parts of 64-row blocks where those are fewer than the SMs
      const long blocks64 = long((batch.max_len + 63) / 64) * heads * batch.size();
      const bool splits = blocks64 < kg::device_limits("check_flash_split").sms && batch.max_len > 96;
      EXPECT_EQ(kg::attention_fa_workspace_bytes(a), splits ? size_t(4) * batch.rows * heads * (head_dim + 2) * 4 : 0u)
          << what << " " << name(t) << (splits ? ": expected 4 parts" : ": expected no split");
    }
    for (int rows : {0, 64, 16}) {
      a.fa_workspace = nullptr, a.fa_workspace_bytes = 0;
      dout.poison();
      kg::disentangled_attention_fa(a, nullptr, rows, 1);
      const std::vector<float> base = dout.floats(t);
      expect_close(base, want, tol, what + " " + name(t) + " fa rows " + std::to_string(rows) + " unsplit vs cpu");
      for (int parts : {0, 2, 4}) {
        const std::string label = what + " " + name(t) + " fa rows " + std::to_string(rows) + " split " +
                                  (parts == 0 ? std::string("by grid") : std::to_string(parts));
        const size_t bytes = kg::attention_fa_workspace_bytes(a, rows, parts);
        if (parts > 1) {
          EXPECT_GT(bytes, 0u) << label;
        }
        DeviceBuffer ws(std::max<size_t>(bytes, 16));
        ws.poison();  // a partial result the merge reads but no block wrote shows as NaN
        a.fa_workspace = ws.get(), a.fa_workspace_bytes = bytes;
        dout.poison();
        kg::disentangled_attention_fa(a, nullptr, rows, parts);
        const std::vector<float> got = dout.floats(t);
        expect_close(got, want, tol, label + " vs cpu");
        expect_close(got, base, tolerance(t), label + " vs unsplit");
        if (bytes == 0) {  // no split at this grid: the unsplit kernel
          EXPECT_EQ(std::memcmp(got.data(), base.data(), got.size() * 4), 0) << label << ": no split, other bits";
        }
        size_t nonzero = 0;
        for (int b = 0; b < batch.size(); ++b) {
          if (batch.length(b) <= 3) continue;
          const float* row2 = got.data() + (size_t(batch.offsets[b]) + 2) * H;
          for (int c = 0; c < H; ++c) nonzero += row2[c] != 0.0f;
        }
        EXPECT_EQ(nonzero, 0u) << label << ": the fully masked row (row 2) is not all zeros";
        dout.poison();
        kg::disentangled_attention_fa(a, nullptr, rows, parts);
        EXPECT_EQ(std::memcmp(got.data(), dout.floats(t).data(), got.size() * 4), 0) << label << ": run twice, other bits";
        kg::AttentionArgs no_shuffle = a;  // runs through shared memory too (AttentionArgs::fa_shuffle): the same bits
        no_shuffle.fa_shuffle = false;
        dout.poison();
        kg::disentangled_attention_fa(no_shuffle, nullptr, rows, parts);
        expect_bits_equal(got, dout.floats(t), label + " shuffles off");
        if (rows == 0 && parts == 0) {  // the dispatch passes fa_split and the workspace on
          kg::AttentionArgs d = a;
          d.tensor_cores = 1, d.tc_kernel = kg::TensorCoreKernel::kFlash;
          EXPECT_EQ(kg::attention_fa_workspace_bytes(d), bytes) << label;
          dout.poison();
          kg::disentangled_attention(d, nullptr);
          EXPECT_EQ(std::memcmp(dout.floats(t).data(), got.data(), got.size() * 4), 0)
              << label << ": disentangled_attention (split auto), other bits";
          d.fa_workspace = nullptr, d.fa_workspace_bytes = 0;
          if (bytes > 0) {
            EXPECT_THROW(kg::disentangled_attention(d, nullptr), Error) << label << ": no workspace";
          }
          d.fa_split = kg::FlashSplit::kOff;
          EXPECT_EQ(kg::attention_fa_workspace_bytes(d), 0u) << label << " split off";
          dout.poison();
          kg::disentangled_attention(d, nullptr);
          EXPECT_EQ(std::memcmp(dout.floats(t).data(), base.data(), base.size() * 4), 0)
              << label << ": disentangled_attention (split off), not the unsplit kernel's bits";
        }
      }
    }
  }
}

// The key split and the unsplit kernel at small shapes (also under compute-sanitizer racecheck:
// scripts/fa_gpu.sh):
// restarting, contiguous and scattered positions, lengths that are not multiples of 16 / 32 / 64,
// sequences shorter than the parts (empty parts), a fully masked row per sequence.
TEST_F(Gpu, DisentangledAttentionFlashSplitSmall) {
  if (!flash_kernel_runs()) GTEST_SKIP() << "the flash kernel does not run on this device (sm_80+ with its shared memory)";
  check_flash_split(Batch({130, 77, 1, 40}, 70), 2, "2x64 L=130,77,1,40 segments", 71);
  check_flash_split(Batch({200, 33}, 72, Positions::kContiguous), 2, "2x64 L=200,33 contiguous", 73);
  check_flash_split(Batch({97, 3, 250}, 74, Positions::kScattered), 2, "2x64 L=97,3,250 scattered", 75);
}

// The key split at the model's shapes (12 heads x 64): L = 128 and 512 with 1, 2 and 8 sequences,
// contiguous, restarting and scattered positions (the CPU reference makes it the slowest here).
TEST_F(Gpu, AttentionFlashSplitModelShapes) {
  const std::vector<ShapeCase> cases = {
      {{128}, Positions::kContiguous, "L128 b1 contiguous"},
      {{128, 128}, Positions::kScattered, "L128 b2 scattered"},
      {std::vector<int>(8, 128), Positions::kSegments, "L128 b8 segments"},
      {{512}, Positions::kContiguous, "L512 b1 contiguous"},
      {{512}, Positions::kScattered, "L512 b1 scattered"},
      {{512, 512}, Positions::kContiguous, "L512 b2 contiguous"},
      {std::vector<int>(8, 512), Positions::kContiguous, "L512 b8 contiguous"},
  };
  if (!flash_kernel_runs()) GTEST_SKIP() << "the flash kernel does not run on this device (sm_80+ with its shared memory)";
  uint32_t seed = 80;
  for (const ShapeCase& c : cases) {
    check_flash_split(Batch(c.lengths, seed, c.positions), 12, c.what, seed + 1);
    seed += 3;
  }
}

// The flash kernel at head_dim 16 (the tiny model's), run directly: not dispatched yet (see
// attention_fa_supported); wrong on the H200 until the ptxas work-around (attention_fa.cu).
TEST_F(Gpu, DisentangledAttentionFlashHeadDim16) {
  const auto fa = kg::TensorCoreKernel::kFlash;
  const Batch odd({17, 63, 65, 129, 191, 2}, 26, Positions::kContiguous), scattered({97, 64, 250, 3, 130}, 27, Positions::kScattered);
  for (DType c : {DType::kF16, DType::kBF16}) {
    check_attention(Batch({40, 9}, 23), 4, 16, c, "attention 4x16 (tiny model)", c, fa);
    check_attention(scattered, 4, 16, c, "attention 4x16 L=97,64,250,3,130 scattered", c, fa);
    check_attention(odd, 4, 16, c, "attention 4x16 L=17,63,65,129,191,2 contiguous", c, fa);
  }
}

// The same at the tiny model's shape (small enough for compute-sanitizer --tool racecheck), the
// WMMA kernel (the flash kernel at head_dim 16: DisentangledAttentionFlashHeadDim16).
TEST_F(Gpu, DisentangledAttentionTensorCoresTinyModel) {
  for (DType c : {DType::kF16, DType::kBF16})
    for (DType t : {c, DType::kF32}) check_attention(Batch({40, 9}, 23), 4, 16, t, "attention 4x16 (tiny model)", c);
}

TEST_F(Gpu, DisentangledAttentionMatchesCpuOnPackedPromptBatch) {
  const Batch batch({128, 77, 1, 200, 33}, 21);
  for (DType t : kTypes) check_attention(batch, 12, 64, t, "attention 12x64 L=128,77,1,200,33");
}

TEST_F(Gpu, DisentangledAttentionClampsRelativePositionsAtL512) {
  const Batch batch({512}, 22, Positions::kContiguous);  // |pos_i - pos_j| up to 511 > 256
  for (DType t : kTypes) check_attention(batch, 12, 64, t, "attention 12x64 L=512 pos 0..511");
}

TEST_F(Gpu, DisentangledAttentionTinyModelHeadDim16) {
  const Batch batch({40, 9}, 23);
  check_attention(batch, 4, 16, DType::kF32, "attention 4x16 (tiny model)");
}

// The link scores of a packed batch (q | k rows of `dim` values each, row stride ld >= 2 dim)
// with each output tile (0 = the one link_scores picks for this GPU; 16, 32, 64 forced: every
// kernel configuration of link_head.cu runs on every shape): Z against the CPU product, every
// link a CPU link, every clear CPU link found, sorted; and a second run gives the same bits.
void check_link_scores(const std::vector<int>& lengths, int dim, int ld, const std::string& what) {
  const Batch batch(lengths, 24);
  auto qk = random_vec(size_t(batch.rows) * ld, 25, -0.3f, 0.3f);
  std::vector<float> want(batch.masks.size());
  for (int b = 0; b < batch.size(); ++b) {
    const float* q = qk.data() + size_t(batch.offsets[b]) * ld;
    kc::gemm(true, batch.length(b), batch.length(b), dim, 1.0f, q, ld, q + dim, ld, 0.0f,
             want.data() + batch.mask_offsets[b], batch.length(b));
  }
  size_t clear = 0;  // CPU links that no rounding can lose
  for (float z : want) clear += z > 1e-3f;
  ASSERT_GT(clear, want.size() / 4) << what;
  DeviceBatchBuffers db(batch);
  auto dqk = DeviceBuffer::from(qk, DType::kF32);
  DeviceBuffer dz(want.size() * 4), dz2(want.size() * 4), dlinks(sizeof(kg::Link) * want.size()), dcount(sizeof(int));
  for (const int tile : {0, 16, 32, 64}) {
    const std::string at = what + " tile " + std::to_string(tile);
    dz.poison(), dz2.poison();
    kg::LinkScoresArgs a;
    a.batch = db.view, a.q = dqk.get<float>(), a.k = dqk.get<float>() + dim, a.ld = ld, a.dim = dim;
    a.threshold = 0.0f, a.links = dlinks.get<kg::Link>(), a.capacity = static_cast<int>(want.size());
    a.count = dcount.get<int>(), a.z_out = dz.get<float>(), a.tile = tile;
    kg::link_scores(a, nullptr);
    const std::vector<float> got = dz.floats(DType::kF32);
    expect_close(got, want, 1e-4, "link scores Z f32 " + at);
    const std::vector<kg::Link> links = kg::fetch_links(a, nullptr);
    std::vector<uint8_t> found(want.size(), 0);  // by index into want
    for (const kg::Link& l : links) {
      ASSERT_TRUE(l.sequence >= 0 && l.sequence < batch.size() && l.row >= 0 && l.row < batch.length(l.sequence) &&
                  l.col >= 0 && l.col < batch.length(l.sequence)) << at;
      const int64_t n = batch.mask_offsets[l.sequence] + int64_t(l.row) * batch.length(l.sequence) + l.col;
      ASSERT_EQ(found[n]++, 0) << at << ": a link twice";
      EXPECT_GT(want[n], -1e-3f) << at;
      EXPECT_NEAR(l.logit, want[n], 1e-4 * std::max(1.0f, std::abs(want[n]))) << at;
    }
    for (size_t n = 0; n < want.size(); ++n)
      ASSERT_TRUE(want[n] <= 1e-3f || found[n]) << at << ": missing the link at " << n;
    EXPECT_TRUE(std::is_sorted(links.begin(), links.end(), [](const kg::Link& x, const kg::Link& y) {
      return std::tie(x.sequence, x.row, x.col) < std::tie(y.sequence, y.row, y.col);
    })) << at;
    // Run to run: the same bits (fixed summation order, no atomics in the sums).
    a.z_out = dz2.get<float>();
    kg::link_scores(a, nullptr);
    const std::vector<kg::Link> again = kg::fetch_links(a, nullptr);
    EXPECT_EQ(std::memcmp(got.data(), dz2.floats(DType::kF32).data(), got.size() * 4), 0) << at << ": other bits";
    ASSERT_EQ(again.size(), links.size()) << at;
    for (size_t n = 0; n < links.size(); ++n)
      EXPECT_EQ(std::memcmp(&again[n], &links[n], sizeof(kg::Link)), 0) << at << ": link " << n << " differs";
  }
}

TEST_F(Gpu, LinkScoresMatchCpuAndCopyBackOnlyLinks) {
  check_link_scores({128, 40, 3, 300}, 768, 2 * 768, "mixed lengths");
  // A buffer too small is reported, not overrun.
  const Batch batch({128}, 24);
  auto qk = random_vec(size_t(batch.rows) * 2 * 768, 25, -0.3f, 0.3f);
  DeviceBatchBuffers db(batch);
  auto dqk = DeviceBuffer::from(qk, DType::kF32);
  DeviceBuffer dlinks(sizeof(kg::Link) * 10), dcount(sizeof(int));
  kg::LinkScoresArgs a;
  a.batch = db.view, a.q = dqk.get<float>(), a.k = dqk.get<float>() + 768, a.ld = 2 * 768, a.dim = 768;
  a.threshold = 0.0f, a.links = dlinks.get<kg::Link>(), a.capacity = 10, a.count = dcount.get<int>();
  kg::link_scores(a, nullptr);
  EXPECT_THROW(kg::fetch_links(a, nullptr), Error);
  // try_fetch_links: the count instead of the throw; a rerun with that room finds every link.
  std::vector<kg::Link> links;
  int count = 0;
  EXPECT_FALSE(kg::try_fetch_links(a, nullptr, links, count));
  EXPECT_TRUE(links.empty());
  ASSERT_GT(count, 10);
  DeviceBuffer room(sizeof(kg::Link) * size_t(count));
  a.links = room.get<kg::Link>(), a.capacity = count;
  kg::link_scores(a, nullptr);
  const int found = count;
  ASSERT_TRUE(kg::try_fetch_links(a, nullptr, links, count));
  EXPECT_EQ(count, found);
  EXPECT_EQ(links.size(), size_t(count));
}

// The shapes where link_scores picks its configurations (issue 13: 16 blocks at batch 1, L 128).
TEST_F(Gpu, LinkScoresBatchOneL128) { check_link_scores({128}, 768, 2 * 768, "b1 L128"); }
TEST_F(Gpu, LinkScoresL512Batch8) { check_link_scores(std::vector<int>(8, 512), 768, 2 * 768, "b8 L512"); }

// Lengths around every tile edge, and many short sequences (prompts of a batch).
TEST_F(Gpu, LinkScoresOddLengthsAndManySequences) {
  check_link_scores({1, 2, 7, 15, 16, 17, 31, 33, 63, 64, 65, 127, 129}, 768, 2 * 768, "odd lengths");
  std::vector<int> many;
  for (int b = 0; b < 100; ++b) many.push_back(5 + (b * 37) % 60);
  check_link_scores(many, 768, 2 * 768, "100 sequences");
}

// dim not a multiple of 4 nor of any stage depth, an odd row stride: the scalar loads.
TEST_F(Gpu, LinkScoresUnalignedRowsAndShortDims) {
  check_link_scores({50, 9, 70}, 70, 141, "dim 70 ld 141");
  check_link_scores({50, 9, 70}, 36, 72, "dim 36 ld 72");  // 16-byte loads, one partial stage
}


// ---- programmatic dependent launch (REXNLU_CUDA_PDL; types.cuh) ---------------------------

// Programmatic edges (cudaGraphDependencyTypeProgrammatic) among a captured graph's edges.
size_t programmatic_edges(cudaGraph_t graph) {
  // Room for every possible edge (a count-only query passes no edge data, which the runtime may
  // refuse as lossy where edges carry some).
  size_t nodes = 0;
  kg::check(cudaGraphGetNodes(graph, nullptr, &nodes), "cudaGraphGetNodes");
  size_t n = nodes * nodes + 1;
  std::vector<cudaGraphNode_t> from(n), to(n);
  std::vector<cudaGraphEdgeData> data(n);
  kg::check(cudaGraphGetEdges(graph, from.data(), to.data(), data.data(), &n), "cudaGraphGetEdges");
  return static_cast<size_t>(std::count_if(data.begin(), data.begin() + static_cast<ptrdiff_t>(n),
                                           [](const cudaGraphEdgeData& e) {
                                             return e.type == cudaGraphDependencyTypeProgrammatic;
                                           }));
}

// Every kernel of ours in one data-dependent chain at small fp16 shapes (4 heads x 64), each
// reading what the one before wrote: embedding -> layer norm (f32 -> f16, x's rows gathered by the
// ids) -> cuBLASLt product (q|k|v) -> the three attention kernels (flash: on the H200 its key split
// in 4 and the merge, the 64-row grid of this batch being short of SMs; WMMA; fp32-math) -> layer
// norms with residuals (one in place) -> GELU (vector and strided kernels) -> conv tap sum (row
// mask + GELU epilogue) -> layer norm with a row mask -> zero rows -> convert to f32 -> masked
// softmax -> rotary -> link scores. Outputs are poisoned (NaN bytes, on the stream)
// before every run, so a kernel that read its predecessor's output before that was complete would
// change bits.
struct PdlChain {
  static constexpr int kHeads = 4, kDim = 64, kH = kHeads * kDim, kVocab = 50, kRel = 256;
  Batch batch{{128, 37, 1, 64}, 41};
  DeviceBatchBuffers db{batch};
  int rows = batch.rows;
  std::vector<int32_t> ids_host = [&] {
    std::vector<int32_t> v(static_cast<size_t>(batch.rows));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>((i * 7 + 3) % kVocab);
    return v;
  }();
  std::vector<uint8_t> keep_host = [&] {
    std::vector<uint8_t> v(static_cast<size_t>(batch.rows));
    for (size_t i = 0; i < v.size(); ++i) v[i] = i % 5 != 2;
    return v;
  }();
  std::vector<uint8_t> smask_host = [&] {
    std::vector<uint8_t> v(static_cast<size_t>(batch.rows) * kH / 2);
    for (size_t i = 0; i < v.size(); ++i) v[i] = (i * 2654435761u >> 7) % 3 != 0;
    return v;
  }();
  std::vector<float> freqs_host = [] {
    std::vector<float> f(kH / 4);
    for (int m = 0; m < kH / 4; ++m) f[m] = 1.0f / std::pow(10000.0f, float(2 * m) / float(kH / 2));
    return f;
  }();
  DeviceBuffer table = DeviceBuffer::from(random_vec(size_t(kVocab) * kH, 42, -2.0f, 2.0f), DType::kF32);
  DeviceBuffer ids = DeviceBuffer::from(ids_host), keep = DeviceBuffer::from(keep_host);
  DeviceBuffer smask = DeviceBuffer::from(smask_host), freqs = DeviceBuffer::from(freqs_host);
  DeviceBuffer gamma = DeviceBuffer::from(random_vec(kH, 43, 0.5f, 1.5f)), beta = DeviceBuffer::from(random_vec(kH, 44));
  DeviceBuffer w = DeviceBuffer::from(random_vec(size_t(3) * kH * kH, 45, -0.1f, 0.1f), DType::kF16);
  DeviceBuffer rel = DeviceBuffer::from(random_vec(size_t(kRel) * 2 * kH, 46, -2.0f, 2.0f), DType::kF16);
  DeviceBuffer ws{32u << 20};
  DeviceBuffer fa_ws{8u << 20};  // the flash kernel's key split (one sequence of 128 tokens splits)
  kg::Blas blas;
  // Outputs, in chain order.
  DeviceBuffer e32{size_t(rows) * kH * 4}, x16{size_t(rows) * kH * 2}, qkv{size_t(rows) * 3 * kH * 2};
  DeviceBuffer ctx_fa{size_t(rows) * kH * 2}, ctx_mma{size_t(rows) * kH * 2}, ctx_f32{size_t(rows) * kH * 2};
  DeviceBuffer h16{size_t(rows) * kH * 2}, c16{size_t(rows) * kH * 2}, c32{size_t(rows) * kH * 4};
  DeviceBuffer z{batch.masks.size() * 4}, links{batch.masks.size() * sizeof(kg::Link)}, count{sizeof(int)};
  std::vector<DeviceBuffer*> outputs() {
    return {&e32, &x16, &qkv, &ctx_fa, &ctx_mma, &ctx_f32, &h16, &c16, &c32, &z, &links, &count};
  }

  kg::AttentionArgs attention(const DeviceBuffer& out, DType compute, kg::TensorCoreKernel kernel) const {
    kg::AttentionArgs a;
    a.type = DType::kF16, a.compute = compute, a.tensor_cores = 1, a.tc_kernel = kernel;
    a.batch = db.view, a.num_heads = kHeads, a.head_dim = kDim;
    a.q = qkv.get(), a.k = qkv.get<char>() + kH * 2, a.v = qkv.get<char>() + 2 * kH * 2, a.ld_qkv = 3 * kH;
    a.q_rel = rel.get(), a.k_rel = rel.get<char>() + kH * 2, a.ld_rel = 2 * kH, a.rel_rows = kRel;
    a.scale = std::sqrt(float(kDim) * 3.0f), a.out = out.get(), a.ld_out = kH;
    a.fa_workspace = fa_ws.get(), a.fa_workspace_bytes = fa_ws.size();
    return a;
  }
  kg::LinkScoresArgs link_args() {
    kg::LinkScoresArgs a;
    a.batch = db.view, a.q = c32.get<float>(), a.k = c32.get<float>() + kH / 2, a.ld = kH, a.dim = kH / 2;
    a.threshold = 0.05f, a.links = links.get<kg::Link>(), a.capacity = static_cast<int>(batch.masks.size());
    a.count = count.get<int>(), a.z_out = z.get<float>();
    return a;
  }
  void poison(cudaStream_t s) {
    for (DeviceBuffer* b : outputs()) kg::check(cudaMemsetAsync(b->get(), 0xFF, b->size(), s), "poison");
  }
  void run(cudaStream_t s) {
    const DType h = DType::kF16;
    kg::embedding(table.get<float>(), ids.get<int32_t>(), rows, kH, e32.get<float>(), s);
    kg::layer_norm(DType::kF32, h, table.get(), e32.get(), gamma.get<float>(), beta.get<float>(), 1e-7f, rows, kH,
                   x16.get(), s, ids.get<int32_t>());  // x = the rows of the ids: LN(2 e32)
    kg::GemmArgs g;
    g.M = rows, g.N = 3 * kH, g.K = kH, g.A = x16.get(), g.lda = kH, g.B = w.get(), g.ldb = kH, g.ab_type = h;
    g.C = qkv.get(), g.ldc = 3 * kH, g.c_type = h;
    blas.gemm(g, ws.get(), ws.size(), s);
    kg::disentangled_attention(attention(ctx_fa, h, kg::TensorCoreKernel::kFlash), s);
    kg::disentangled_attention(attention(ctx_mma, h, kg::TensorCoreKernel::kWmma), s);
    kg::disentangled_attention(attention(ctx_f32, DType::kF32, kg::TensorCoreKernel::kFlash), s);
    kg::layer_norm(h, h, ctx_fa.get(), x16.get(), gamma.get<float>(), beta.get<float>(), 1e-7f, rows, kH, h16.get(), s);
    kg::layer_norm(h, h, h16.get(), ctx_mma.get(), gamma.get<float>(), beta.get<float>(), 1e-7f, rows, kH, h16.get(), s);
    kg::layer_norm(h, h, h16.get(), ctx_f32.get(), gamma.get<float>(), beta.get<float>(), 1e-7f, rows, kH, h16.get(), s);
    kg::gelu_erf(h, h16.get(), size_t(rows) * kH, s);
    kg::gelu_erf_rows(h, h16.get<char>() + 8 * 2, size_t(rows), kH - 8, kH, s);
    kg::conv1d_k3_combine(h, h, qkv.get(), db.view, kH, gamma.get<float>(), c16.get(), s, keep.get<uint8_t>(), true);
    kg::layer_norm(h, h, c16.get(), h16.get(), gamma.get<float>(), beta.get<float>(), 1e-7f, rows, kH, c16.get(), s,
                   nullptr, keep.get<uint8_t>());
    kg::zero_rows(h, c16.get(), keep.get<uint8_t>(), rows, kH, s);
    kg::convert(h, c16.get(), DType::kF32, c32.get(), size_t(rows) * kH, s);
    kg::masked_softmax(c32.get<float>(), rows, kH / 2, kH, smask.get<uint8_t>(), kH / 2, s);
    kg::rotary_interleaved(c32.get<float>(), rows, kH / 2, 2, kH, db.view.position_ids, freqs.get<float>(), s);
    kg::link_scores(link_args(), s);
  }
  // Every output's bytes, the links sorted (link_scores appends them in no particular order).
  std::vector<std::vector<char>> results(cudaStream_t s) {
    std::vector<std::vector<char>> r;
    const std::vector<kg::Link> found = kg::fetch_links(link_args(), s);
    for (DeviceBuffer* b : outputs()) {
      if (b == &links) {
        r.emplace_back(reinterpret_cast<const char*>(found.data()),
                       reinterpret_cast<const char*>(found.data() + found.size()));
        continue;
      }
      r.emplace_back(b->size());
      kg::check(cudaMemcpy(r.back().data(), b->get(), b->size(), cudaMemcpyDeviceToHost), "download");
    }
    return r;
  }
};

void expect_same_bits(const std::vector<std::vector<char>>& got, const std::vector<std::vector<char>>& want,
                      const std::string& what) {
  static const char* const names[] = {"embedding", "layer_norm f32->f16", "gemm q|k|v", "attention fa",
                                      "attention wmma", "attention fp32 math", "layer_norm h", "conv/zero_rows",
                                      "convert/softmax/rotary", "link scores Z", "links", "link count"};
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(got[i] == want[i]) << what << ": " << names[i] << " differs from the run without PDL";
}

TEST_F(Gpu, ProgrammaticDependentLaunchGivesTheSameBits) {
  if (kg::probe_device(0).cc_major < 9) GTEST_SKIP() << "programmatic dependent launch needs sm_90+";
  PdlChain chain;
  ASSERT_TRUE(kg::attention_fa_supported(chain.attention(chain.ctx_fa, DType::kF16, kg::TensorCoreKernel::kFlash)));
  ASSERT_LE(kg::attention_fa_workspace_bytes(chain.attention(chain.ctx_fa, DType::kF16, kg::TensorCoreKernel::kFlash)),
            chain.fa_ws.size());
  kg::check(cudaDeviceSynchronize(), "uploads");  // pageable cudaMemcpy may return before the copy landed
  cudaStream_t s = nullptr;
  kg::check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  kg::set_programmatic_launch(false);
  chain.poison(s);
  chain.run(s);
  const auto want = chain.results(s);
  // Sanity: the chain computed something (finite, links found).
  const int links = *reinterpret_cast<const int*>(want.back().data());
  EXPECT_GT(links, 0);
  EXPECT_LE(links, static_cast<int>(chain.batch.masks.size()));
  const std::vector<float> z = decode(want[9], DType::kF32);
  EXPECT_TRUE(std::all_of(z.begin(), z.end(), [](float v) { return std::isfinite(v); })) << "Z not finite";
  std::printf("  PDL chain: %zu rows, %d links\n", static_cast<size_t>(chain.rows), links);

  kg::set_programmatic_launch(true);
  for (int pass = 0; pass < 3; ++pass) {
    chain.poison(s);
    chain.run(s);
    expect_same_bits(chain.results(s), want, "PDL on, stream, pass " + std::to_string(pass));
  }
  // Captured into a graph (as CudaBackend::run_recorded does): our launches add programmatic
  // edges with PDL on (off: none of ours; cuBLASLt's own launches are not counted on either way);
  // replays give the same bits.
  size_t edges_with[2] = {0, 0};
  for (const bool pdl : {true, false}) {
    kg::set_programmatic_launch(pdl);
    cudaGraph_t graph = nullptr;
    kg::check(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), "capture");
    chain.run(s);
    kg::check(cudaStreamEndCapture(s, &graph), "end capture");
    edges_with[pdl] = programmatic_edges(graph);
    std::printf("  PDL %s: captured graph has %zu programmatic edges\n", pdl ? "on" : "off", edges_with[pdl]);
    cudaGraphExec_t exec = nullptr;
    const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    kg::check(made, "cudaGraphInstantiate");
    for (int replay = 0; replay < 2; ++replay) {
      chain.poison(s);
      kg::check(cudaGraphLaunch(exec, s), "cudaGraphLaunch");
      expect_same_bits(chain.results(s), want,
                       std::string("graph, PDL ") + (pdl ? "on" : "off") + ", replay " + std::to_string(replay));
    }
    cudaGraphExecDestroy(exec);
  }
  // At least 16 of our launches follow a kernel (all but the first and link_scores, which follows
  // its memset; 17 where the flash attention splits and merges).
  EXPECT_GE(edges_with[1], edges_with[0] + 10) << "PDL launches captured without programmatic edges";
  kg::set_programmatic_launch(false);
  kg::check(cudaStreamSynchronize(s), "sync");
  cudaStreamDestroy(s);
}

}  // namespace
}  // namespace rexnlu::backends
