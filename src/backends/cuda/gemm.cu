#include "backends/cuda/gemm.h"

#include <cublasLt.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "backends/cuda/common.h"
#include "rexnlu/error.h"

namespace rexnlu::backends::cuda {

namespace {

// cublasGetStatusString lives in libcublas, which we do not link: name the common ones here.
std::string status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "cublasStatus " + std::to_string(static_cast<int>(s));
  }
}

void check_lt(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw InternalError(std::string("cuBLASLt ") + what + ": " + status_name(status));
}

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::kF16: return CUDA_R_16F;
    case DType::kBF16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

// Largest power of two (up to 256) that divides the address: cuBLASLt's heuristic assumes
// 256-byte aligned buffers unless told otherwise.
int alignment(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  int align = 256;
  while (align > 1 && a % static_cast<uintptr_t>(align) != 0) align /= 2;
  return align;
}

// ---- tuning (gemm.h) ----
constexpr int kHeuristicAlgos = 16;  // asked of the heuristic when tuning
constexpr int kSplitKBases = 4;      // heuristic algorithms (without split-K) given split-K variants
constexpr int kSplits[] = {2, 3, 4};
// Timing: after one warm-up each, kRounds rounds (forward, then backward, against drift) of
// kReps events around `inner` back-to-back products; a candidate's time is its best round's
// median per product. `inner` makes a rep about kRepUs long by the heuristic's first choice
// (1 to kMaxInner products: the events resolve ~0.5 us; large products are not repeated more).
constexpr int kRounds = 2, kReps = 3, kMaxInner = 8;
constexpr float kRepUs = 50.0f;
constexpr double kTie = 1.03;  // the earliest (heuristic's order) within 3 % of the fastest wins
constexpr unsigned long long kHoldTimeoutNs = 50'000'000;

// Holds the stream until the host sets *flag (at most timeout_ns): the timed products queue up
// behind it, so the events measure the GPU's back-to-back time, not the host's launch rate
// (cublasLtMatmul costs the host microseconds, as much as a small product on the GPU).
// flag[0]: go; flag[1] is set when the timeout ended the hold instead.
__global__ void hold_until(volatile int* flag, unsigned long long timeout_ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    if (flag[0] != 0) return;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < timeout_ns);
  flag[1] = 1;
}

template <typename T>
T config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  T v{};
  size_t written = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof v, &written);
  return v;
}

template <typename T>
T capability(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr) {
  T v{};
  size_t written = 0;
  cublasLtMatmulAlgoCapGetAttribute(&algo, attr, &v, sizeof v, &written);
  return v;
}

std::string describe_algo(const cublasLtMatmulAlgo_t& a) {
  const uint32_t reduction = config<uint32_t>(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
  const char* red = reduction == CUBLASLT_REDUCTION_SCHEME_INPLACE        ? "in-place"
                    : reduction == CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE ? "fp32"
                    : reduction == CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE  ? "output-type"
                                                                          : "none";
  return "algo " + std::to_string(config<int32_t>(a, CUBLASLT_ALGO_CONFIG_ID)) + " tile " +
         std::to_string(config<uint32_t>(a, CUBLASLT_ALGO_CONFIG_TILE_ID)) + " stages " +
         std::to_string(config<uint32_t>(a, CUBLASLT_ALGO_CONFIG_STAGES_ID)) + " splitK " +
         std::to_string(config<int32_t>(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM)) + " reduction " + red + " swizzle " +
         std::to_string(config<uint32_t>(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING)) + " custom " +
         std::to_string(config<uint32_t>(a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION)) + " cluster " +
         std::to_string(config<uint16_t>(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID));
}

// M's bucket: plans whose keys differ only in M within a bucket share a tuned pick (gemm.h).
int m_bucket(int M) {
  if (M <= 1024) return (M + 63) / 64 * 64;
  int step = 128;  // 2^(floor(log2(M - 1)) - 3): 8 buckets per octave
  while (step * 16 <= M - 1) step *= 2;
  return (M + step - 1) / step * step;
}

// Bytes from the first to one past the last element of a rows x cols matrix with row stride ld.
size_t extent(int rows, int cols, int ld, DType t) {
  return (static_cast<size_t>(rows - 1) * static_cast<size_t>(ld) + static_cast<size_t>(cols)) * dtype_size(t);
}

bool overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  if (a == nullptr || b == nullptr) return false;
  const auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return pa < pb + b_bytes && pb < pa + a_bytes;
}

// True also when it cannot be told (then no tuning: it would synchronize a capture).
bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
    cudaGetLastError();
    return true;
  }
  return status != cudaStreamCaptureStatusNone;
}

// Events of one timed round, destroyed on every path.
struct Events {
  cudaEvent_t e[kReps + 1] = {};
  Events() {
    for (cudaEvent_t& x : e) check(cudaEventCreate(&x), "cuda::gemm tuning (cudaEventCreate)");
  }
  ~Events() {
    for (cudaEvent_t x : e)
      if (x) cudaEventDestroy(x);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
};

// Sets the host flag on every path out of a held round (else the GPU waits out the timeout).
struct Release {
  int* flag;
  ~Release() {
    if (flag == nullptr) return;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    *static_cast<volatile int*>(flag) = 1;
  }
};

}  // namespace

GemmTune parse_gemm_tune(const char* value) {
  const std::string v = value == nullptr ? "" : value;
  if (v.empty() || v == "1") return GemmTune::kOn;
  if (v == "0") return GemmTune::kOff;
  if (v == "verbose") return GemmTune::kVerbose;
  throw InputError("REXNLU_CUDA_GEMM_TUNE=" + v + ": expected 1 (time cuBLASLt's candidates per shape, the default), "
                   "0 (the heuristic's first choice) or verbose (1, and each choice on stderr)");
}

GemmTune gemm_tune_from_env() { return parse_gemm_tune(std::getenv("REXNLU_CUDA_GEMM_TUNE")); }

std::string GemmPlanInfo::describe() const {
  char how[128] = "heuristic's first, not tuned";
  if (candidates == 1) std::snprintf(how, sizeof how, "the only candidate");
  if (candidates > 1 && tuned_at_M == M)
    std::snprintf(how, sizeof how, "#%d of %d timed, %.2f us (heuristic's first %.2f us)", picked, candidates,
                  picked_us, first_us);
  if (candidates > 1 && tuned_at_M != M)
    std::snprintf(how, sizeof how, "the pick timed at M=%d (#%d of %d, %.2f us vs the heuristic's first %.2f us there)",
                  tuned_at_M, picked, candidates, picked_us, first_us);
  return std::to_string(M) + "x" + std::to_string(K) + (trans_b ? " x W^T " : " x W ") + "-> " + std::to_string(N) +
         " " + std::string(dtype_name(ab_type)) + "->" + std::string(dtype_name(c_type)) + (bias ? " +bias" : "") +
         ": " + how + ": " + algo;
}

struct Blas::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  cublasLtMatmulAlgo_t first{};  // the heuristic's first choice (where a reused pick is refused)
  GemmPlanInfo info;
  ~Plan() {
    if (desc) cublasLtMatmulDescDestroy(desc);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
  }
};

struct Blas::Heuristic {
  std::vector<cublasLtMatmulHeuristicResult_t> results;
};

struct Blas::Candidate {
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
  bool ok = true;
  float us = std::numeric_limits<float>::infinity();
};

Blas::Blas(GemmTune tune) : tune_(tune) {
  cublasLtHandle_t h = nullptr;
  check_lt(cublasLtCreate(&h), "create");
  handle_ = h;
}

Blas::~Blas() {
  plans_.clear();
  if (handle_) cublasLtDestroy(static_cast<cublasLtHandle_t>(handle_));
  if (host_flag_) cudaFreeHost(host_flag_);
}

std::vector<GemmPlanInfo> Blas::plan_infos() const {
  std::vector<GemmPlanInfo> out;
  out.reserve(plans_.size());
  for (const auto& [key, plan] : plans_) out.push_back(plan->info);
  return out;
}

// Descriptors and the heuristic's algorithms for a new key; tuned unless off or capturing.
std::unique_ptr<Blas::Plan> Blas::make_plan(const Key& bucket_key, const GemmArgs& g, void* workspace,
                                            size_t workspace_bytes, cudaStream_t stream) {
  const int align_a = alignment(g.B), align_b = alignment(g.A), align_c = alignment(g.C);
  auto p = std::make_unique<Plan>();
  const cudaDataType_t ab = cuda_type(g.ab_type), ct = cuda_type(g.c_type);
  check_lt(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "matmul desc");
  const cublasOperation_t op_a = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = CUBLAS_OP_N;
  check_lt(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a), "transa");
  check_lt(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b), "transb");
  if (g.bias) {
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    check_lt(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi), "epilogue");
    check_lt(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &ct, sizeof ct),
             "bias type");
  }
  // cuBLAS A = our B: column-major [K, N] when trans_b (B row-major [N, K]), else [N, K].
  check_lt(g.trans_b ? cublasLtMatrixLayoutCreate(&p->a, ab, g.K, g.N, g.ldb)
                     : cublasLtMatrixLayoutCreate(&p->a, ab, g.N, g.K, g.ldb),
           "layout A");
  check_lt(cublasLtMatrixLayoutCreate(&p->b, ab, g.K, g.M, g.lda), "layout B");
  check_lt(cublasLtMatrixLayoutCreate(&p->c, ct, g.N, g.M, g.ldc), "layout C");

  cublasLtMatmulPreference_t pref = nullptr;
  check_lt(cublasLtMatmulPreferenceCreate(&pref), "preference");
  const uint32_t aa = static_cast<uint32_t>(align_a), ab_ = static_cast<uint32_t>(align_b),
                 ac = static_cast<uint32_t>(align_c);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                       sizeof workspace_bytes);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aa, sizeof aa);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ab_, sizeof ab_);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ac, sizeof ac);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ac, sizeof ac);
  // One algorithm untuned (as before tuning existed), up to kHeuristicAlgos to time.
  Heuristic heuristic;
  std::vector<cublasLtMatmulHeuristicResult_t>& results = heuristic.results;
  results.resize(tune_ == GemmTune::kOff ? 1 : kHeuristicAlgos);
  int found = 0;
  const cublasStatus_t hs =
      cublasLtMatmulAlgoGetHeuristic(static_cast<cublasLtHandle_t>(handle_), p->desc, p->a, p->b, p->c, p->c, pref,
                                     static_cast<int>(results.size()), results.data(), &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (hs != CUBLAS_STATUS_SUCCESS || found == 0)
    throw InternalError("cuBLASLt has no algorithm for M=" + std::to_string(g.M) + " N=" + std::to_string(g.N) +
                        " K=" + std::to_string(g.K) + " (" + status_name(hs) + ")");
  results.resize(static_cast<size_t>(found));
  p->algo = p->first = results[0].algo;
  GemmPlanInfo& info = p->info;
  info.trans_b = g.trans_b, info.M = g.M, info.N = g.N, info.K = g.K;
  info.ab_type = g.ab_type, info.c_type = g.c_type, info.bias = g.bias != nullptr;
  if (g.bias)
    check_lt(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof g.bias),
             "bias pointer");
  // Never while capturing: timing synchronizes. Such a plan keeps the heuristic's choice (gemm.h).
  if (tune_ != GemmTune::kOff && !capturing(stream)) {
    const auto tuned = tuned_buckets_.find(bucket_key);
    if (tuned == tuned_buckets_.end() || !reuse_pick(*p, *tuned->second, workspace_bytes)) {
      std::vector<Candidate> cands = candidates(*p, heuristic, g, workspace_bytes);
      tune_plan(*p, cands, g, workspace, stream);
    }
  }
  info.algo = describe_algo(p->algo);
  if (tune_ == GemmTune::kVerbose) std::fprintf(stderr, "rexnlu cuda gemm plan: %s\n", info.describe().c_str());
  return p;
}

void Blas::gemm(const GemmArgs& g, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  require_float_type(g.ab_type, "cuda::gemm A/B");
  require_float_type(g.c_type, "cuda::gemm C");
  if (g.c_type != DType::kF32 && g.c_type != g.ab_type)
    throw InternalError("cuda::gemm: C must be F32 or the type of A and B");
  if (g.M <= 0 || g.N <= 0) return;
  if (g.K <= 0 || g.lda < g.K || g.ldb < (g.trans_b ? g.K : g.N) || g.ldc < g.N)
    throw InternalError("cuda::gemm: bad shape M=" + std::to_string(g.M) + " N=" + std::to_string(g.N) +
                        " K=" + std::to_string(g.K));
  // Row-major C = A op(B) is column-major C^T = op(B)^T A^T: cuBLAS's "A" is our B, its "B" our A.
  const int align_a = alignment(g.B), align_b = alignment(g.A), align_c = alignment(g.C);
  const int align_bias = g.bias ? alignment(g.bias) : 0;
  const Key key{g.trans_b, g.M, g.N, g.K, g.lda, g.ldb, g.ldc, static_cast<int>(g.ab_type),
                static_cast<int>(g.c_type), g.bias != nullptr, align_a, workspace_bytes, align_b, align_c,
                align_bias};
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    // The key with M's bucket for M and alignments above 16 bytes as 16 (a pick cuBLASLt then
    // refuses at the real product falls back below).
    Key bucket_key = key;
    std::get<1>(bucket_key) = m_bucket(g.M);
    for (int* align : {&std::get<10>(bucket_key), &std::get<12>(bucket_key), &std::get<13>(bucket_key),
                       &std::get<14>(bucket_key)})
      *align = std::min(*align, 16);
    it = plans_.emplace(key, make_plan(bucket_key, g, workspace, workspace_bytes, stream)).first;
    const GemmPlanInfo& info = it->second->info;
    if (info.candidates > 1 && info.tuned_at_M == g.M) tuned_buckets_[bucket_key] = it->second.get();
  }
  Plan& p = *it->second;
  if (g.bias)
    check_lt(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof g.bias),
             "bias pointer");
  const auto matmul = [&] {
    return cublasLtMatmul(static_cast<cublasLtHandle_t>(handle_), p.desc, &g.alpha, g.B, p.a, g.A, p.b, &g.beta, g.C,
                          p.c, g.C, p.c, &p.algo, workspace, workspace_bytes, stream);
  };
  cublasStatus_t status = matmul();
  if (status != CUBLAS_STATUS_SUCCESS && std::memcmp(&p.algo, &p.first, sizeof p.algo) != 0) {
    // A pick (tuned, or reused from another M of the bucket) that cuBLASLt refuses here after all
    // (it refuses before launching): the heuristic's first choice from now on.
    p.algo = p.first;
    p.info.candidates = p.info.picked = p.info.tuned_at_M = 0;
    p.info.first_us = p.info.picked_us = 0.0f;
    p.info.algo = describe_algo(p.algo);
    status = matmul();
  }
  check_lt(status, "matmul");
}

// Takes the pick of `tuned` (another M of the same bucket) where cuBLASLt accepts it for `p`.
bool Blas::reuse_pick(Plan& p, const Plan& tuned, size_t workspace_bytes) const {
  cublasLtMatmulHeuristicResult_t checked{};
  if (cublasLtMatmulAlgoCheck(static_cast<cublasLtHandle_t>(handle_), p.desc, p.a, p.b, p.c, p.c, &tuned.algo,
                              &checked) != CUBLAS_STATUS_SUCCESS ||
      checked.workspaceSize > workspace_bytes)
    return false;
  p.algo = tuned.algo;
  p.info.candidates = tuned.info.candidates;
  p.info.picked = tuned.info.picked;
  p.info.first_us = tuned.info.first_us;
  p.info.picked_us = tuned.info.picked_us;
  p.info.tuned_at_M = tuned.info.tuned_at_M;
  return true;
}

std::vector<Blas::Candidate> Blas::candidates(const Plan& p, const Heuristic& heuristic, const GemmArgs& g,
                                              size_t workspace_bytes) const {
  const std::vector<cublasLtMatmulHeuristicResult_t>& results = heuristic.results;
  std::vector<Candidate> out;
  const auto add = [&](const cublasLtMatmulAlgo_t& algo, size_t workspace) {
    for (const Candidate& c : out)
      if (std::memcmp(&c.algo, &algo, sizeof algo) == 0) return;
    Candidate c;
    c.algo = algo;
    c.workspace = workspace;
    out.push_back(c);
  };
  // Split-K that adds partial sums in a 16-bit output type: a rounding per part (the first result
  // stays: it is what runs untuned).
  const auto coarse = [&](const cublasLtMatmulAlgo_t& algo) {
    const uint32_t r = config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
    return g.c_type != DType::kF32 && config<int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM) > 1 &&
           (r == CUBLASLT_REDUCTION_SCHEME_INPLACE || r == CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE);
  };
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].state != CUBLAS_STATUS_SUCCESS || (i > 0 && coarse(results[i].algo))) continue;
    add(results[i].algo, results[i].workspaceSize);
  }
  // Split-K variants (the partial sums in fp32 in the workspace) of the first algorithms that
  // allow them: at small M the grid is too small to fill the GPU otherwise.
  int bases = 0;
  const auto lt = static_cast<cublasLtHandle_t>(handle_);
  for (const cublasLtMatmulHeuristicResult_t& r : results) {
    if (bases == kSplitKBases) break;
    if (r.state != CUBLAS_STATUS_SUCCESS || config<int32_t>(r.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM) > 1) continue;
    if (capability<int32_t>(r.algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT) == 0 ||
        (capability<uint32_t>(r.algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK) & CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE) ==
            0)
      continue;
    ++bases;
    for (const int32_t splits : kSplits) {
      if (splits > g.K / 16) break;
      cublasLtMatmulAlgo_t algo = r.algo;
      const uint32_t scheme = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
      if (cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits, sizeof splits) !=
              CUBLAS_STATUS_SUCCESS ||
          cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme, sizeof scheme) !=
              CUBLAS_STATUS_SUCCESS)
        continue;
      cublasLtMatmulHeuristicResult_t checked{};
      if (cublasLtMatmulAlgoCheck(lt, p.desc, p.a, p.b, p.c, p.c, &algo, &checked) == CUBLAS_STATUS_SUCCESS &&
          checked.workspaceSize <= workspace_bytes)
        add(algo, checked.workspaceSize);
    }
  }
  return out;
}

void Blas::tune_plan(Plan& p, std::vector<Candidate>& cands, const GemmArgs& g, void* workspace, cudaStream_t stream) {
  if (cands.empty()) return;
  if (cands.size() == 1) {  // nothing to choose from
    p.algo = cands[0].algo;
    p.info.candidates = 1;
    return;
  }
  // The timing runs write the real C only where the real product overwrites it without reading
  // it and without reading what they wrote (gemm.h); else a zeroed scratch C of the same extent
  // and the same address modulo 256 (so of the same alignment: the candidates were chosen for C's).
  const size_t c_bytes = extent(g.M, g.N, g.ldc, g.c_type);
  const size_t b_bytes = g.trans_b ? extent(g.N, g.K, g.ldb, g.ab_type) : extent(g.K, g.N, g.ldb, g.ab_type);
  const bool in_place = g.beta == 0.0f && !overlaps(g.C, c_bytes, g.A, extent(g.M, g.K, g.lda, g.ab_type)) &&
                        !overlaps(g.C, c_bytes, g.B, b_bytes) &&
                        !overlaps(g.C, c_bytes, g.bias, static_cast<size_t>(g.N) * dtype_size(g.c_type));
  void* target = g.C;
  void* scratch = nullptr;
  if (!in_place) {
    if (cudaMalloc(&scratch, c_bytes + 256) != cudaSuccess) {  // no room: untuned, not an error
      cudaGetLastError();
      return;
    }
    target = static_cast<char*>(scratch) + reinterpret_cast<uintptr_t>(g.C) % 256;
  }
  struct FreeScratch {
    void* p;
    ~FreeScratch() {
      if (p) cudaFree(p);  // synchronizes the device: the timing runs are over
    }
  } free_scratch{scratch};
  if (scratch) check(cudaMemsetAsync(target, 0, c_bytes, stream), "cuda::gemm tuning (scratch)");
  time_candidates(cands, p, g, target, workspace, stream);

  float best = std::numeric_limits<float>::infinity();
  int timed = 0;
  for (const Candidate& c : cands)
    if (c.ok) best = std::min(best, c.us), ++timed;
  if (!std::isfinite(best)) return;  // none timed: the heuristic's first choice stays
  size_t picked = 0;
  while (!(cands[picked].ok && cands[picked].us <= best * kTie)) ++picked;
  p.algo = cands[picked].algo;
  p.info.candidates = timed;
  p.info.picked = static_cast<int>(picked);
  p.info.picked_us = cands[picked].us;
  p.info.first_us = cands[0].ok ? cands[0].us : 0.0f;
  p.info.tuned_at_M = g.M;
}

void Blas::time_candidates(std::vector<Candidate>& cands, const Plan& p, const GemmArgs& g, void* C, void* workspace,
                           cudaStream_t stream) {
  const auto lt = static_cast<cublasLtHandle_t>(handle_);
  const auto run = [&](const Candidate& c) {
    return cublasLtMatmul(lt, p.desc, &g.alpha, g.B, p.a, g.A, p.b, &g.beta, C, p.c, C, p.c, &c.algo, workspace,
                          c.workspace, stream);
  };
  // Warm-up: loads each candidate's kernels, drops those cuBLASLt refuses.
  bool refused = false;
  for (Candidate& c : cands) {
    c.ok = run(c) == CUBLAS_STATUS_SUCCESS;
    refused |= !c.ok;
  }
  if (refused) cudaGetLastError();  // a refused launch must not surface in the next kernel's check
  check(cudaStreamSynchronize(stream), "cuda::gemm tuning (warm-up)");
  if (!flag_tried_) {
    flag_tried_ = true;
    void* h = nullptr;
    void* d = nullptr;
    if (cudaHostAlloc(&h, 2 * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable) == cudaSuccess &&
        cudaHostGetDevicePointer(&d, h, 0) == cudaSuccess) {
      host_flag_ = static_cast<int*>(h);
      device_flag_ = static_cast<int*>(d);
      host_flag_[1] = 0;
    } else {  // timed without the hold: small products then time the host's launches too
      if (h) cudaFreeHost(h);
      cudaGetLastError();
    }
  }
  const Events ev;
  int inner = kMaxInner;
  if (cands[0].ok) {  // one product of the heuristic's first choice (host launch included: an upper bound)
    check(cudaEventRecord(ev.e[0], stream), "cuda::gemm tuning (event)");
    const bool ok = run(cands[0]) == CUBLAS_STATUS_SUCCESS;
    check(cudaEventRecord(ev.e[1], stream), "cuda::gemm tuning (event)");
    check(cudaEventSynchronize(ev.e[1]), "cuda::gemm tuning (timing)");
    float ms = 0.0f;
    check(cudaEventElapsedTime(&ms, ev.e[0], ev.e[1]), "cuda::gemm tuning (elapsed)");
    if (ok && ms > 0.0f) inner = std::clamp(static_cast<int>(kRepUs / (1000.0f * ms) + 0.5f), 1, kMaxInner);
  }
  const int n = static_cast<int>(cands.size());
  for (int round = 0; round < kRounds; ++round) {
    for (int k = 0; k < n; ++k) {
      Candidate& c = cands[static_cast<size_t>(round % 2 ? n - 1 - k : k)];
      if (!c.ok) continue;
      bool ok = true;
      {
        const Release release{device_flag_ ? host_flag_ : nullptr};
        if (device_flag_) {
          *static_cast<volatile int*>(host_flag_) = 0;
          std::atomic_thread_fence(std::memory_order_seq_cst);
          hold_until<<<1, 1, 0, stream>>>(device_flag_, kHoldTimeoutNs);
          check_launch("cuda::gemm tuning (hold)");
        }
        check(cudaEventRecord(ev.e[0], stream), "cuda::gemm tuning (event)");
        for (int r = 0; r < kReps; ++r) {
          for (int i = 0; i < inner; ++i) ok = ok && run(c) == CUBLAS_STATUS_SUCCESS;
          check(cudaEventRecord(ev.e[r + 1], stream), "cuda::gemm tuning (event)");
        }
      }
      check(cudaEventSynchronize(ev.e[kReps]), "cuda::gemm tuning (timing)");
      if (device_flag_ && static_cast<volatile int*>(host_flag_)[1] != 0) {
        // The host took longer than the timeout to queue a round (something in the launches
        // waited for the GPU?): hold no more, the times then include the host's launch cost.
        device_flag_ = nullptr;
        std::fprintf(stderr, "rexnlu cuda gemm tuning: the GPU hold timed out; timing without it from now on\n");
      }
      if (!ok) {
        cudaGetLastError();
        c.ok = false;
        continue;
      }
      float ms[kReps];
      for (int r = 0; r < kReps; ++r) check(cudaEventElapsedTime(&ms[r], ev.e[r], ev.e[r + 1]), "cuda::gemm tuning (elapsed)");
      std::sort(ms, ms + kReps);
      c.us = std::min(c.us, 1000.0f * ms[kReps / 2] / static_cast<float>(inner));
    }
  }
}

}  // namespace rexnlu::backends::cuda
