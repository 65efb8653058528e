// Per-kernel GPU timings of one encoder layer + the link head at the model's full size
// (H=768, 12 heads, I=3072, rel_rows=512) for a few batch shapes and storage types:
//   bench_kernels_cuda            -> a markdown table (median of 50 timed runs after 5 warm-ups,
//                                    CUDA events; inputs random, not zeros). Each timed run is a
//                                    CUDA graph of 10 calls replayed, divided by 10: the GPU's time
//                                    as in a forward's replay (time_us; until session 15, 10
//                                    back-to-back launches, which for short kernels timed the
//                                    host's launch rate, ~4 us; until session 9 one launch).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/attention_fa.h"
#include "backends/cuda/attention_mma.h"
#include "backends/cuda/common.h"
#include "backends/cuda/device.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/ops.h"

namespace kg = rexnlu::backends::cuda;
using rexnlu::DType;

namespace {

void* device_random(size_t n, DType t, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<char> bytes(n * rexnlu::dtype_size(t));
  for (size_t i = 0; i < n; ++i) {
    const float v = d(rng);
    if (t == DType::kF32) reinterpret_cast<float*>(bytes.data())[i] = v;
    if (t == DType::kF16) reinterpret_cast<__half*>(bytes.data())[i] = __float2half_rn(v);
    if (t == DType::kBF16) reinterpret_cast<__nv_bfloat16*>(bytes.data())[i] = __float2bfloat16_rn(v);
  }
  void* p = nullptr;
  kg::check(cudaMalloc(&p, bytes.size()), "cudaMalloc");
  kg::check(cudaMemcpy(p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), "upload");
  return p;
}

template <typename V>
void* upload(const std::vector<V>& v) {
  void* p = nullptr;
  kg::check(cudaMalloc(&p, v.size() * sizeof(V)), "cudaMalloc");
  kg::check(cudaMemcpy(p, v.data(), v.size() * sizeof(V), cudaMemcpyHostToDevice), "upload");
  return p;
}

int g_back_to_back = 0;  // cells timed by launching back to back (f not capturable)

// The median over 50 timed runs (CUDA events, after 5 warm-ups) of one call of f, in microseconds.
// A run is a CUDA graph of 10 calls of f, captured once and replayed (divided by 10): the GPU's
// time as in a forward's replay, without the host's launch cost. Until session 15 a run was 10
// back-to-back launches, which for kernels shorter than the host's launch rate (~4 us each) timed
// the host; that is still the fallback where f cannot be captured (counted in g_back_to_back).
double time_us(cudaStream_t s, const std::function<void()>& f) {
  constexpr int kCalls = 10;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  bool captured = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess;
  if (captured) {
    try {
      for (int k = 0; k < kCalls; ++k) f();
    } catch (const std::exception&) {
      captured = false;
    }
    cudaGraph_t g = nullptr;
    captured = cudaStreamEndCapture(s, &g) == cudaSuccess && captured && g != nullptr;
    if (g && !captured) cudaGraphDestroy(g);
    if (captured) graph = g;
    captured = captured && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
  }
  if (!captured) {
    cudaGetLastError();  // the failed capture's error, not sticky
    ++g_back_to_back;
  }
  auto run = [&] {
    if (captured) kg::check(cudaGraphLaunch(exec, s), "graph replay");
    else
      for (int k = 0; k < kCalls; ++k) f();
  };
  for (int i = 0; i < 5; ++i) run();
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> ms;
  for (int i = 0; i < 50; ++i) {
    cudaEventRecord(a, s);
    run();
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float t = 0;
    cudaEventElapsedTime(&t, a, b);
    ms.push_back(t / kCalls);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  if (exec) cudaGraphExecDestroy(exec);
  if (graph) cudaGraphDestroy(graph);
  std::sort(ms.begin(), ms.end());
  return 1000.0 * ms[ms.size() / 2];
}

const char* name(DType t) { return t == DType::kF32 ? "f32" : t == DType::kF16 ? "f16" : "bf16"; }

// The flash attention of ONE sequence (grids short of SMs: what a single request runs), fp16, for
// the demo model's 4 heads and the full-size model's 12 (x 64) at lengths 32..512: each block shape
// unsplit, and split into 2 and 4 parts (fewer where the sequence has fewer key chunks), against
// what the dispatch picks (AttentionArgs::fa_split kAuto).
void small_grids(cudaStream_t s) {
  std::printf("\n| heads | L | by grid (rows, parts) | 16 rows x 1 / x 2 / x 4 | 64 rows x 1 / x 2 / x 4 |\n|---|---|---|---|---|\n");
  const int hd = 64, rel_rows = 512;
  for (int heads : {4, 12}) {
    for (int L : {32, 64, 96, 128, 192, 256, 384, 512}) {
      const int H = heads * hd;
      std::vector<int32_t> offsets{0, L}, pos;
      std::vector<int64_t> mask_offsets{0};
      for (int t = 0; t < L; ++t) pos.push_back(t < 20 ? t : t - 20);  // prompt, then text from 0
      std::vector<uint8_t> masks(size_t(L) * L, 1);
      kg::DeviceBatch batch;
      batch.num_sequences = 1, batch.max_length = L, batch.rows = L;
      void* const uploads[] = {upload(offsets), upload(mask_offsets), upload(pos), upload(masks)};
      batch.offsets = static_cast<int32_t*>(uploads[0]);
      batch.mask_offsets = static_cast<int64_t*>(uploads[1]);
      batch.position_ids = static_cast<int32_t*>(uploads[2]);
      batch.masks = static_cast<uint8_t*>(uploads[3]);
      batch.mask_bits = static_cast<uint32_t*>(upload(std::vector<uint32_t>((masks.size() + 31) / 32, ~0u)));
      batch.mask_span = static_cast<int64_t>(masks.size());
      const DType t = DType::kF16;
      void* qkv = device_random(size_t(L) * 3 * H, t, 2, -1, 1);
      void* rel = device_random(size_t(rel_rows) * 2 * H, t, 3, -1, 1);
      void* ctx = device_random(size_t(L) * H, t, 10, -1, 1);
      kg::AttentionArgs a;
      a.type = a.compute = t, a.batch = batch, a.num_heads = heads, a.head_dim = hd, a.q = qkv;
      a.k = static_cast<char*>(qkv) + H * 2, a.v = static_cast<char*>(qkv) + 2 * H * 2, a.ld_qkv = 3 * H;
      a.q_rel = rel, a.k_rel = static_cast<char*>(rel) + H * 2, a.ld_rel = 2 * H, a.rel_rows = rel_rows;
      a.scale = std::sqrt(192.0f), a.out = ctx, a.ld_out = H;
      size_t most = kg::attention_fa_workspace_bytes(a);
      for (int rows : {16, 64})
        for (int parts : {2, 4}) most = std::max(most, kg::attention_fa_workspace_bytes(a, rows, parts));
      void* ws = nullptr;
      kg::check(cudaMalloc(&ws, std::max<size_t>(most, 16)), "split workspace");
      a.fa_workspace = ws, a.fa_workspace_bytes = most;
      const int sms = kg::device_limits("bench_kernels_cuda").sms;
      const size_t bytes = kg::attention_fa_workspace_bytes(a), per_part = size_t(L) * heads * (hd + 2) * sizeof(float);
      const int rows = bytes > 0 || !kg::attention_grid_is_small(a, sms) ? 64 : 16;  // the split runs 64 rows
      std::printf("| %d | %d | %.1f (%d, %zu) |", heads, L, time_us(s, [&] { kg::disentangled_attention_fa(a, s, 0); }),
                  rows, bytes == 0 ? size_t(1) : bytes / per_part);
      for (int r : {16, 64}) {
        const int chunks = (L + (r == 64 ? 32 : 64) - 1) / (r == 64 ? 32 : 64);
        for (int parts : {1, 2, 4}) {
          if (parts > chunks) std::printf(" -");
          else std::printf(" %.1f", time_us(s, [&] { kg::disentangled_attention_fa(a, s, r, parts); }));
          std::printf("%s", parts == 4 ? " |" : " /");
        }
      }
      std::printf("\n");
      for (void* p : uploads) cudaFree(p);
      for (void* p : {qkv, rel, ctx, ws}) cudaFree(p);
    }
  }
}

}  // namespace

int main() {
  const kg::DeviceInfo info = kg::probe_device(0);
  if (!info.usable) {
    std::printf("no usable CUDA device: %s\n", info.reason.c_str());
    return 0;
  }
  std::printf("%s\n\n", kg::describe(info).c_str());
  const int H = 768, heads = 12, hd = 64, I = 3072, rel_rows = 512;
  cudaStream_t s;
  kg::check(cudaStreamCreate(&s), "stream");
  kg::Blas blas;
  const size_t ws_bytes = 32u << 20;
  void* ws = nullptr;
  kg::check(cudaMalloc(&ws, ws_bytes), "ws");

  std::printf("| shape | type | qkv GEMM | attention (fused) | out GEMM+bias | LN+res | FFN up | GELU | FFN down | LN+res | "
              "layer sum | x12 layers | head GEMM (f32 out) | rotary | link scores | attention share | attention mma, 64 rows / 16 rows x 4 key groups | "
              "attention fa by grid: split auto (rows, parts; 1 = unsplit) / split off / shuffles off | attention fa unsplit, 64 rows / 16 rows | "
              "attention fa split forced, 64 rows x 2 parts / x 4 parts | link scores, tile 16 / 32 / 64 | "
              "FFN up + GELU epilogue (tanh) |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (auto [L, B] : {std::pair{128, 1}, {128, 8}, {128, 32}, {512, 1}, {512, 8}}) {
    const int T = L * B;
    std::vector<int32_t> offsets{0}, pos;
    std::vector<int64_t> mask_offsets;
    for (int b = 0; b < B; ++b) {
      mask_offsets.push_back(int64_t(b) * L * L);
      offsets.push_back(offsets.back() + L);
      for (int t = 0; t < L; ++t) pos.push_back(t < 20 ? t : t - 20);  // prompt, then text from 0
    }
    std::vector<uint8_t> masks(size_t(B) * L * L, 1);
    kg::DeviceBatch batch;
    batch.num_sequences = B, batch.max_length = L, batch.rows = T;
    batch.offsets = static_cast<int32_t*>(upload(offsets));
    batch.mask_offsets = static_cast<int64_t*>(upload(mask_offsets));
    batch.position_ids = static_cast<int32_t*>(upload(pos));
    batch.masks = static_cast<uint8_t*>(upload(masks));
    batch.mask_bits = static_cast<uint32_t*>(upload(std::vector<uint32_t>((masks.size() + 31) / 32, ~0u)));
    batch.mask_span = static_cast<int64_t>(masks.size());
    for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
      const size_t es = rexnlu::dtype_size(t);
      void* h = device_random(size_t(T) * H, t, 1, -1, 1);
      void* qkv = device_random(size_t(T) * 3 * H, t, 2, -1, 1);
      void* rel = device_random(size_t(rel_rows) * 2 * H, t, 3, -1, 1);
      void* w_qkv = device_random(size_t(3 * H) * H, t, 4, -0.05f, 0.05f);
      void* b_qkv = device_random(3 * H, t, 5, -0.1f, 0.1f);
      void* w_o = device_random(size_t(H) * H, t, 6, -0.05f, 0.05f);
      void* w_i = device_random(size_t(I) * H, t, 7, -0.05f, 0.05f);
      void* w_out = device_random(size_t(H) * I, t, 8, -0.05f, 0.05f);
      void* bias_h = device_random(I, t, 9, -0.1f, 0.1f);
      void* ctx = device_random(size_t(T) * H, t, 10, -1, 1);
      void* attn = device_random(size_t(T) * H, t, 11, -1, 1);
      void* inter = device_random(size_t(T) * I, t, 12, -1, 1);
      float* gamma = static_cast<float*>(device_random(H, DType::kF32, 13, 0.5f, 1.5f));
      float* beta = static_cast<float*>(device_random(H, DType::kF32, 14, -0.1f, 0.1f));
      void* w_head = device_random(size_t(2 * H) * H, t, 15, -0.05f, 0.05f);
      float* b_head = static_cast<float*>(device_random(2 * H, DType::kF32, 16, -0.1f, 0.1f));
      float* qk = static_cast<float*>(device_random(size_t(T) * 2 * H, DType::kF32, 17, -0.3f, 0.3f));
      float* freqs = static_cast<float*>(device_random(H / 2, DType::kF32, 18, 0.0f, 1.0f));
      const size_t zn = size_t(B) * L * L;
      void* links = nullptr;
      int* count = nullptr;
      kg::check(cudaMalloc(&links, zn * sizeof(kg::Link)), "links");
      kg::check(cudaMalloc(reinterpret_cast<void**>(&count), sizeof(int)), "count");

      auto linear = [&](const void* x, int in, const void* w, const void* bias, int out, void* y, DType ct) {
        kg::GemmArgs g;
        g.M = T, g.N = out, g.K = in, g.A = x, g.lda = in, g.B = w, g.ldb = in, g.ab_type = t, g.C = y, g.ldc = out;
        g.c_type = ct, g.bias = bias;
        blas.gemm(g, ws, ws_bytes, s);
      };
      // The FFN up with its GELU in cuBLASLt's epilogue (16-bit only: CudaBackend::gelu_epilogue).
      auto linear_gelu = [&](const void* x, int in, const void* w, const void* bias, int out, void* y) {
        kg::GemmArgs g;
        g.M = T, g.N = out, g.K = in, g.A = x, g.lda = in, g.B = w, g.ldb = in, g.ab_type = t, g.C = y, g.ldc = out;
        g.c_type = t, g.bias = bias, g.gelu_tanh = true;
        blas.gemm(g, ws, ws_bytes, s);
      };
      kg::AttentionArgs a;
      a.type = t, a.batch = batch, a.num_heads = heads, a.head_dim = hd, a.q = qkv;
      a.k = static_cast<char*>(qkv) + H * es, a.v = static_cast<char*>(qkv) + 2 * H * es, a.ld_qkv = 3 * H;
      a.q_rel = rel, a.k_rel = static_cast<char*>(rel) + H * es, a.ld_rel = 2 * H, a.rel_rows = rel_rows;
      a.scale = std::sqrt(192.0f), a.out = ctx, a.ld_out = H;
      kg::LinkScoresArgs ls;
      ls.batch = batch, ls.q = qk, ls.k = qk + H, ls.ld = 2 * H, ls.dim = H, ls.threshold = 0.0f;
      ls.links = static_cast<kg::Link*>(links), ls.capacity = static_cast<int>(zn), ls.count = count;

      std::vector<double> us;
      us.push_back(time_us(s, [&] { linear(h, H, w_qkv, b_qkv, 3 * H, qkv, t); }));
      us.push_back(time_us(s, [&] { kg::disentangled_attention(a, s); }));
      us.push_back(time_us(s, [&] { linear(ctx, H, w_o, bias_h, H, attn, t); }));
      us.push_back(time_us(s, [&] { kg::layer_norm(t, t, attn, h, gamma, beta, 1e-7f, T, H, attn, s); }));
      us.push_back(time_us(s, [&] { linear(attn, H, w_i, bias_h, I, inter, t); }));
      us.push_back(time_us(s, [&] { kg::gelu_erf(t, inter, size_t(T) * I, s); }));
      us.push_back(time_us(s, [&] { linear(inter, I, w_out, bias_h, H, h, t); }));
      us.push_back(time_us(s, [&] { kg::layer_norm(t, t, h, attn, gamma, beta, 1e-7f, T, H, h, s); }));
      double layer = 0;
      for (double u : us) layer += u;
      const double head = time_us(s, [&] { linear(h, H, w_head, b_head, 2 * H, qk, DType::kF32); });
      const double rot = time_us(s, [&] { kg::rotary_interleaved(qk, T, H, 2, 2 * H, batch.position_ids, freqs, s); });
      const double link = time_us(s, [&] { kg::link_scores(ls, s); });
      // The tensor-core kernel: 16-bit storage computes in its type, fp32 storage in fp16.
      kg::AttentionArgs am = a;
      am.compute = t == DType::kF32 ? DType::kF16 : t;
      const bool mma_ok = kg::attention_mma_supported(am);
      const double mma1 = mma_ok ? time_us(s, [&] { kg::disentangled_attention_mma(am, s, 1); }) : -1.0;
      const double mma4 = mma_ok ? time_us(s, [&] { kg::disentangled_attention_mma(am, s, 4); }) : -1.0;
      std::printf("| L=%d B=%d | %s |", L, B, name(t));
      for (double u : us) std::printf(" %.1f |", u);
      std::printf(" %.1f | %.0f | %.1f | %.1f | %.1f | %.0f%% | %.1f / %.1f |", layer, 12 * layer, head, rot, link,
                  100.0 * us[1] / layer, mma1, mma4);
      // The flash kernel (16-bit storage only, computed in its type; "-" for fp32): by grid as the
      // dispatch runs it (AttentionArgs::fa_split kAuto, the default: its rows and parts) and with the
      // split off; each block shape unsplit; 64 rows split into 2 and 4 parts forced (is the
      // automatic pick right at this shape?). The split's workspace is allocated here (the dispatch
      // takes it from the backend's Workspace).
      kg::AttentionArgs af = a;
      af.compute = t;
      if (t != DType::kF32 && kg::attention_fa_supported(af)) {
        const size_t bytes = kg::attention_fa_workspace_bytes(af);
        const size_t most = std::max(bytes, kg::attention_fa_workspace_bytes(af, 64, 4));  // the forced parts below
        void* split_ws = nullptr;
        kg::check(cudaMalloc(&split_ws, most), "split workspace");
        af.fa_workspace = split_ws, af.fa_workspace_bytes = most;
        kg::AttentionArgs off = af;
        off.fa_split = kg::FlashSplit::kOff;
        const int rows = bytes > 0 || !kg::attention_grid_is_small(af, kg::device_limits("bench_kernels_cuda").sms) ? 64 : 16;
        const size_t per_part = size_t(T) * heads * (hd + 2) * sizeof(float);
        const double by_grid = time_us(s, [&] { kg::disentangled_attention_fa(af, s, 0); });
        const double split_off = time_us(s, [&] { kg::disentangled_attention_fa(off, s, 0); });
        kg::AttentionArgs no_shuffle = af;  // runs of contiguous positions through shared memory too
        no_shuffle.fa_shuffle = false;
        const double shuffle_off = time_us(s, [&] { kg::disentangled_attention_fa(no_shuffle, s, 0); });
        const double fa64 = time_us(s, [&] { kg::disentangled_attention_fa(af, s, 64, 1); });
        const double fa16 = time_us(s, [&] { kg::disentangled_attention_fa(af, s, 16, 1); });
        const double split2 = time_us(s, [&] { kg::disentangled_attention_fa(af, s, 64, 2); });
        const double split4 = time_us(s, [&] { kg::disentangled_attention_fa(af, s, 64, 4); });
        std::printf(" %.1f (%d rows, %zu) / %.1f / %.1f | %.1f / %.1f | %.1f / %.1f |", by_grid, rows,
                    bytes == 0 ? size_t(1) : bytes / per_part, split_off, shuffle_off, fa64, fa16, split2, split4);
        cudaFree(split_ws);
      } else {
        std::printf(" - | - | - |");
      }
      // The link scores' configurations (link_head.cu; "link scores" above: the one picked by the grid).
      for (const int tile : {16, 32, 64}) {
        kg::LinkScoresArgs lt = ls;
        lt.tile = tile;
        std::printf(" %.1f%s", time_us(s, [&] { kg::link_scores(lt, s); }), tile == 64 ? " |" : " /");
      }
      // Against "FFN up" + "GELU" above.
      if (t != DType::kF32) std::printf(" %.1f |\n", time_us(s, [&] { linear_gelu(attn, H, w_i, bias_h, I, inter); }));
      else std::printf(" - |\n");
      for (void* p : {h, qkv, rel, w_qkv, b_qkv, w_o, w_i, w_out, bias_h, ctx, attn, inter, static_cast<void*>(gamma),
                      static_cast<void*>(beta), w_head, static_cast<void*>(b_head), static_cast<void*>(qk),
                      static_cast<void*>(freqs), links, static_cast<void*>(count)})
        cudaFree(p);
    }
  }
  kg::check(cudaStreamSynchronize(s), "sync");
  small_grids(s);
  std::printf("\n(microseconds, median of 50 replays of a graph of 10 calls; x12 layers = 12 x layer sum, conv and "
              "embeddings not included; %d cells timed back to back instead: not capturable)\n",
              g_back_to_back);
  return 0;
}
