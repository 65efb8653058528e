// cuBLASLt's options for the encoder's four products (qkv, attention output, FFN up with the GELU
// epilogue, FFN down) at 128, 1024 and 4096 rows, on a GPU, in CUDA-graph replay time (20 calls
// captured, replayed 7 times, best per call):
//   1. fp16 as rexnlu runs them (bias epilogue, fp32 accumulation), fp16 with the residual added in
//      the epilogue (beta = 1), fp8 (E4M3 x E4M3 -> fp16) with per-channel x per-token scales
//      (CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F) and with scalar scales, and what quantizing the
//      product's input to E4M3 per row costs (one block per row: amax, then the scaled copy);
//   2. every result of the heuristic (up to 8) for the fp16 products, with its configuration and
//      whether its output equals the first result's bit for bit.
// Synthetic operands (a hash of the index). What it decided: docs/benchmarks.md "Session 24".
//   cuda_gemm_options            (built with -DREXNLU_CUDA=ON -DREXNLU_BUILD_BENCH=ON)
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "cuda_gemm_options: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

cublasLtHandle_t lt;
cudaStream_t stream;
void* workspace;
size_t workspace_bytes = 32u << 20;

struct Product {
  const char* name;
  int N, K;
  bool gelu;
};

__device__ uint32_t mix(size_t i, uint32_t seed) {
  uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
  h ^= h >> 13, h *= 0x5bd1e995u, h ^= h >> 15;
  return h;
}
__global__ void fill_half(__half* p, size_t n, uint32_t seed, float scale) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = __float2half(((mix(i, seed) & 0xffffu) / 65535.0f - 0.5f) * scale);
}
__global__ void fill_fp8(__nv_fp8_e4m3* p, size_t n, uint32_t seed) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = __nv_fp8_e4m3(((mix(i, seed) & 0xffffu) / 65535.0f - 0.5f) * 400.0f);
}
__global__ void fill_float(float* p, int n, float v) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = v * (1.0f + (i % 7) * 0.01f);
}

// One row per block of 128 threads (K a multiple of 1024): amax, scale = amax / 448, E4M3 copy.
__global__ void quantize_rows(const __half* x, int K, __nv_fp8_e4m3* q, float* scale) {
  const __half* row = x + size_t(blockIdx.x) * K;
  float m = 0.0f;
  for (int i = threadIdx.x * 8; i < K; i += blockDim.x * 8) {
    uint4 v = *reinterpret_cast<const uint4*>(row + i);
    const __half2* h = reinterpret_cast<const __half2*>(&v);
    for (int j = 0; j < 4; ++j) {
      const float2 f = __half22float2(h[j]);
      m = fmaxf(m, fmaxf(fabsf(f.x), fabsf(f.y)));
    }
  }
  for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  __shared__ float warp_max[4];
  if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x >> 5] = m;
  __syncthreads();
  m = fmaxf(fmaxf(warp_max[0], warp_max[1]), fmaxf(warp_max[2], warp_max[3]));
  const float s = m > 0.0f ? m / 448.0f : 1.0f, inv = 1.0f / s;
  for (int i = threadIdx.x * 8; i < K; i += blockDim.x * 8) {
    uint4 v = *reinterpret_cast<const uint4*>(row + i);
    const __half2* h = reinterpret_cast<const __half2*>(&v);
    __align__(8) __nv_fp8_e4m3 o[8];
    for (int j = 0; j < 4; ++j) {
      const float2 f = __half22float2(h[j]);
      o[2 * j] = __nv_fp8_e4m3(f.x * inv), o[2 * j + 1] = __nv_fp8_e4m3(f.y * inv);
    }
    *reinterpret_cast<uint2*>(q + size_t(blockIdx.x) * K + i) = *reinterpret_cast<uint2*>(o);
  }
  if (threadIdx.x == 0) scale[blockIdx.x] = s;
}

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulHeuristicResult_t results[8] = {};
  int found = 0;
  ~Plan() {
    if (desc) cublasLtMatmulDescDestroy(desc);
    for (auto l : {a, b, c})
      if (l) cublasLtMatrixLayoutDestroy(l);
  }
};

enum class Scales { kNone, kScalar, kOuterVector };

// Row-major D[M,N] = X[M,K] W[N,K]^T + bias (+ C), as rexnlu's cuda::gemm asks it: cuBLAS's A is W
// (transposed), its B is X. False where the heuristic has nothing.
bool make_plan(Plan& p, int M, int N, int K, bool fp8, Scales scales, bool gelu, const void* bias, const float* scale_w,
               const float* scale_x, int want) {
  const cudaDataType_t ab = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16F, bias_type = CUDA_R_16F;
  cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
  cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
  const cublasLtEpilogue_t epi = gelu ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
  cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type);
  cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
  if (scales == Scales::kOuterVector) {
    const cublasLtMatmulMatrixScale_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode, sizeof mode);
    cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode, sizeof mode);
  }
  if (scales != Scales::kNone) {
    cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_w, sizeof scale_w);
    cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_x, sizeof scale_x);
  }
  cublasLtMatrixLayoutCreate(&p.a, ab, K, N, K);
  cublasLtMatrixLayoutCreate(&p.b, ab, K, M, K);
  cublasLtMatrixLayoutCreate(&p.c, CUDA_R_16F, N, M, N);
  cublasLtMatmulPreference_t pref;
  cublasLtMatmulPreferenceCreate(&pref);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                       sizeof workspace_bytes);
  const cublasStatus_t s =
      cublasLtMatmulAlgoGetHeuristic(lt, p.desc, p.a, p.b, p.c, p.c, pref, want, p.results, &p.found);
  cublasLtMatmulPreferenceDestroy(pref);
  return s == CUBLAS_STATUS_SUCCESS && p.found > 0;
}

// Microseconds per call of f (which returns a cublasStatus_t or 0): 20 calls captured in a graph,
// replayed 8 times, the first dropped, best of the rest; -1 where the first plain call fails.
template <class F>
float time_us(F f) {
  if (f() != 0) return -1.0f;
  check(cudaStreamSynchronize(stream), "warm call");
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "capture");
  for (int i = 0; i < 20; ++i) f();
  check(cudaStreamEndCapture(stream, &graph), "capture end");
  check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0), cudaEventCreate(&e1);
  float best = 1e30f;
  for (int r = 0; r < 8; ++r) {
    cudaEventRecord(e0, stream);
    check(cudaGraphLaunch(exec, stream), "replay");
    cudaEventRecord(e1, stream);
    check(cudaEventSynchronize(e1), "replay wait");
    float ms = 0.0f;
    cudaEventElapsedTime(&ms, e0, e1);
    if (r) best = std::min(best, ms);
  }
  cudaEventDestroy(e0), cudaEventDestroy(e1);
  cudaGraphExecDestroy(exec), cudaGraphDestroy(graph);
  return best * 1000.0f / 20.0f;
}

}  // namespace

int main() {
  check(cudaStreamCreate(&stream), "stream");
  if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) return 1;
  check(cudaMalloc(&workspace, workspace_bytes), "workspace");
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, 0), "device");
  std::printf("%s (sm_%d%d, %d SMs), cuBLASLt %zu\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount,
              cublasLtGetVersion());
  const Product products[] = {{"qkv", 2304, 768, false}, {"out", 768, 768, false}, {"up+gelu", 3072, 768, true},
                              {"down", 768, 3072, false}};
  const int row_counts[] = {128, 1024, 4096};
  const size_t max_mk = 4096 * 3072, max_nk = 3072 * 768, max_mn = 4096 * 3072;
  __half *X, *W, *D, *C, *bias;
  __nv_fp8_e4m3 *X8, *W8;
  float *scale_x, *scale_w, *ones;
  check(cudaMalloc(&X, max_mk * 2), "X");
  check(cudaMalloc(&W, max_nk * 2), "W");
  check(cudaMalloc(&D, max_mn * 2), "D");
  check(cudaMalloc(&C, max_mn * 2), "C");
  check(cudaMalloc(&bias, 4096 * 2), "bias");
  check(cudaMalloc(&X8, max_mk), "X8");
  check(cudaMalloc(&W8, max_nk), "W8");
  check(cudaMalloc(&scale_x, 4096 * 4), "scales");
  check(cudaMalloc(&scale_w, 4096 * 4), "scales");
  check(cudaMalloc(&ones, 4096 * 4), "scales");
  fill_half<<<(max_mk + 255) / 256, 256>>>(X, max_mk, 1, 2.0f);
  fill_half<<<(max_nk + 255) / 256, 256>>>(W, max_nk, 2, 0.1f);
  fill_half<<<(max_mn + 255) / 256, 256>>>(C, max_mn, 3, 1.0f);
  fill_half<<<16, 256>>>(bias, 4096, 4, 0.1f);
  fill_fp8<<<(max_mk + 255) / 256, 256>>>(X8, max_mk, 5);
  fill_fp8<<<(max_nk + 255) / 256, 256>>>(W8, max_nk, 6);
  fill_float<<<16, 256>>>(scale_x, 4096, 0.01f);
  fill_float<<<16, 256>>>(scale_w, 4096, 0.0005f);
  fill_float<<<16, 256>>>(ones, 4096, 1.0f);
  check(cudaDeviceSynchronize(), "fill");
  const float alpha = 1.0f, beta0 = 0.0f, beta1 = 1.0f;
  auto matmul = [&](const Plan& p, int i, const void* w, const void* x, const float* beta, const void* c) {
    return static_cast<int>(cublasLtMatmul(lt, p.desc, &alpha, w, p.a, x, p.b, beta, c, p.c, D, p.c,
                                           &p.results[i].algo, workspace, workspace_bytes, stream));
  };

  std::printf("\n1. us per call; fp16+C = the residual in the epilogue (beta 1); fp8 = E4M3 x E4M3 -> fp16 with\n"
              "   per-channel x per-token (vec) or scalar scales; quant = the input to E4M3 per row; -1: no algorithm\n");
  std::printf("%-8s %5s | %8s %8s | %8s %8s | %8s | %s\n", "product", "M", "fp16", "fp16+C", "fp8 vec", "fp8 scal", "quant",
              "TFLOP/s fp16, fp8 vec");
  for (const int M : row_counts) {
    for (const Product& pr : products) {
      const int N = pr.N, K = pr.K;
      float t16 = -1, t16c = -1, t8 = -1, t8s = -1;
      Plan p16, pc, p8, p8s;
      if (make_plan(p16, M, N, K, false, Scales::kNone, pr.gelu, bias, nullptr, nullptr, 1))
        t16 = time_us([&] { return matmul(p16, 0, W, X, &beta0, D); });
      if (!pr.gelu && make_plan(pc, M, N, K, false, Scales::kNone, false, bias, nullptr, nullptr, 1))
        t16c = time_us([&] { return matmul(pc, 0, W, X, &beta1, C); });
      if (make_plan(p8, M, N, K, true, Scales::kOuterVector, pr.gelu, bias, scale_w, scale_x, 1))
        t8 = time_us([&] { return matmul(p8, 0, W8, X8, &beta0, D); });
      if (make_plan(p8s, M, N, K, true, Scales::kScalar, pr.gelu, bias, ones, ones, 1))
        t8s = time_us([&] { return matmul(p8s, 0, W8, X8, &beta0, D); });
      const float tq = time_us([&] {
        quantize_rows<<<M, 128, 0, stream>>>(X, K, X8, scale_x);
        return 0;
      });
      const double flop = 2.0 * M * N * K;
      std::printf("%-8s %5d | %8.2f %8.2f | %8.2f %8.2f | %8.2f | %.0f, %.0f\n", pr.name, M, t16, t16c, t8, t8s, tq,
                  t16 > 0 ? flop / t16 * 1e-6 : 0.0, t8 > 0 ? flop / t8 * 1e-6 : 0.0);
    }
  }

  std::printf("\n2. fp16: every heuristic result, us per call, its configuration, its bits against result [0]\n");
  std::vector<__half> first(max_mn), other(max_mn);
  for (const int M : row_counts) {
    for (const Product& pr : products) {
      Plan p;
      if (!make_plan(p, M, pr.N, pr.K, false, Scales::kNone, pr.gelu, bias, nullptr, nullptr, 8)) continue;
      std::printf("%-8s M=%4d\n", pr.name, M);
      const size_t n = size_t(M) * pr.N;
      for (int i = 0; i < p.found; ++i) {
        const float t = time_us([&] { return matmul(p, i, W, X, &beta0, D); });
        check(cudaMemsetAsync(D, 0, n * 2, stream), "clear");
        matmul(p, i, W, X, &beta0, D);
        check(cudaStreamSynchronize(stream), "run");
        check(cudaMemcpy((i ? other : first).data(), D, n * 2, cudaMemcpyDeviceToHost), "copy back");
        size_t differing = 0;
        for (size_t e = 0; i && e < n; ++e) differing += std::memcmp(&first[e], &other[e], 2) != 0;
        int tile = 0, split_k = 0, reduction = 0;
        size_t written;
        cublasLtMatmulAlgoConfigGetAttribute(&p.results[i].algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &written);
        cublasLtMatmulAlgoConfigGetAttribute(&p.results[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split_k, sizeof split_k,
                                             &written);
        cublasLtMatmulAlgoConfigGetAttribute(&p.results[i].algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &reduction,
                                             sizeof reduction, &written);
        const std::string bits = i == 0 ? "(reference)" : differing == 0 ? "same bits" : std::to_string(differing) + " elements differ";
        std::printf("   [%d] %7.2f us  waves %5.2f  tile %3d  split K %2d  reduction %d  %s\n", i, t, p.results[i].wavesCount,
                    tile, split_k, reduction, bits.c_str());
      }
    }
  }
  return 0;
}
