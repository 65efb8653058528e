// Matrix products on the GPU through cuBLASLt, row-major like backends::cpu::gemm:
//   C[M,N] = alpha * A[M,K] · op(B) + beta * C (+ bias[N] on every row)
// trans_b = true: B is [N,K] (nn.Linear weight), op(B) = B^T; false: B is [K,N].
// A and B share one storage type (F32, F16 or BF16); C is that type or F32. Accumulation is
// always fp32 (CUBLAS_COMPUTE_32F: no TF32 for F32 inputs, so F32 matches the CPU to ~1e-6).
// The bias runs as cuBLASLt's BIAS epilogue. Its GELU epilogue is NOT used: PyTorch and XLA fuse
// only the tanh-approximate GELU into it, and the model needs the exact erf GELU
// (backends::cuda::gelu_erf); whether it matches erf to 1e-4 was not measured here.
//
// Autotuning (issue 13): cuBLASLt's heuristic ranks algorithms by a model, and its first choice
// is often not the fastest at small M (batch 1). When a plan is made, Blas asks the heuristic
// for up to 16 algorithms, adds split-K variants (2, 3, 4 parts, reduced in fp32 in the
// workspace) of the first few that allow it, times every candidate on the stream and keeps the
// fastest (tuning; gemm.cu says how). Switch: REXNLU_CUDA_GEMM_TUNE=0 keeps the heuristic's
// first choice, =verbose prints each plan's choice on stderr, unset or 1 tunes.
//  - Correctness: timing runs write the output. They write the real C only when beta == 0 and C
//    overlaps none of A, B and bias (the real product overwrites it after), otherwise a zeroed
//    scratch C of the same extent and alignment; then the real product runs once with the pick.
//  - Reproducibility: within one Blas a plan's algorithm is fixed when it is made (the one
//    exception: a pick cuBLASLt refuses at the plan's first product falls back to the heuristic's
//    first for good), so a shape gives the same bits on every call and in CUDA graph replays.
//    Across processes the pick may differ where two algorithms time alike, i.e. results may
//    differ in the last bits from run to run (as between GPUs); to keep that rare, the pick is
//    the earliest in the heuristic's order within 3 % of the fastest. 16-bit outputs never take
//    split-K variants that add partial sums in the output type (in-place / output-type
//    reduction) unless the heuristic's first choice is one; the added variants reduce in fp32.
//  - Not during stream capture: a plan first needed while `stream` is being captured (a CUDA
//    graph) takes the heuristic's first choice and keeps it (so graph and direct calls agree);
//    the backend's graphs record from a shape's second pass, so plans are normally made before.
//  - Cost: a few to tens of milliseconds per tuning. Packed batches make a new M at nearly every
//    call, so a pick is shared within an M bucket (multiples of 64 up to 1024, then 8 buckets per
//    octave; pointer alignments of 16 bytes and more alike; the rest of the key equal): a new
//    plan whose bucket was tuned already takes that pick without timing, once
//    cublasLtMatmulAlgoCheck accepts it for the new M. Which M of a bucket came first thus
//    decides the others' algorithm (history-dependent last bits, as above).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "tensor/dtype.h"

namespace rexnlu::backends::cuda {

struct GemmArgs {
  bool trans_b = true;
  int M = 0, N = 0, K = 0;
  float alpha = 1.0f, beta = 0.0f;
  const void* A = nullptr;  // [M, K], row stride lda
  int lda = 0;
  const void* B = nullptr;  // [N, K] (trans_b) or [K, N], row stride ldb
  int ldb = 0;
  DType ab_type = DType::kF32;
  void* C = nullptr;  // [M, N], row stride ldc
  int ldc = 0;
  DType c_type = DType::kF32;
  const void* bias = nullptr;  // [N] of c_type, or null
};

enum class GemmTune { kOff, kOn, kVerbose };

// REXNLU_CUDA_GEMM_TUNE's value: null, "" or "1" -> kOn, "0" -> kOff, "verbose" -> kVerbose;
// anything else throws rexnlu::Error (kInvalidInput) naming the variable.
GemmTune parse_gemm_tune(const char* value);
GemmTune gemm_tune_from_env();

// What a plan runs, for logs and benchmarks (Blas::plan_infos).
struct GemmPlanInfo {
  bool trans_b = true;
  int M = 0, N = 0, K = 0;
  DType ab_type = DType::kF32, c_type = DType::kF32;
  bool bias = false;
  int candidates = 0;      // algorithms timed; 0: not tuned (REXNLU_CUDA_GEMM_TUNE=0, made during capture),
                           // 1: the heuristic offered one (nothing timed)
  int picked = 0;          // the one kept, by index (0: the heuristic's first choice)
  float first_us = 0.0f;   // plan-time GPU time per product of the heuristic's first choice
  float picked_us = 0.0f;  // and of the one kept (0 when nothing was timed)
  int tuned_at_M = 0;      // the M these were timed at: M, or another of its bucket whose pick it reuses
  std::string algo;        // the algorithm kept: "algo 66 tile 20 stages 26 splitK 1 ..."
  std::string describe() const;  // one line: shape, types, candidates, times, algo
};

// One cuBLASLt handle with a cache of matmul plans (descriptors + the algorithm, tuned or the
// heuristic's) keyed by shape, types, strides and pointer alignment. Not thread-safe: one per stream.
class Blas {
 public:
  explicit Blas(GemmTune tune = gemm_tune_from_env());
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;

  // Enqueues the product on `stream`; `workspace` (device, may be null with bytes 0) is
  // cuBLASLt's scratch, 32 MiB is plenty on Hopper. Throws rexnlu::Error (kInternal) on bad
  // arguments or when cuBLASLt has no algorithm for them.
  void gemm(const GemmArgs& args, void* workspace, size_t workspace_bytes, cudaStream_t stream);

  size_t cached_plans() const { return plans_.size(); }
  // Every plan made so far, in key order.
  std::vector<GemmPlanInfo> plan_infos() const;
  GemmTune tune() const { return tune_; }

 private:
  struct Plan;
  struct Heuristic;  // cuBLASLt's ranked algorithms for a plan
  struct Candidate;  // one algorithm to time
  using Key = std::tuple<int, int, int, int, int, int, int, int, int, int, int, size_t, int, int, int>;
  std::unique_ptr<Plan> make_plan(const Key& bucket_key, const GemmArgs& args, void* workspace, size_t workspace_bytes,
                                  cudaStream_t stream);
  bool reuse_pick(Plan& plan, const Plan& tuned, size_t workspace_bytes) const;
  std::vector<Candidate> candidates(const Plan& plan, const Heuristic& heuristic, const GemmArgs& args,
                                    size_t workspace_bytes) const;
  void tune_plan(Plan& plan, std::vector<Candidate>& candidates, const GemmArgs& args, void* workspace,
                 cudaStream_t stream);
  void time_candidates(std::vector<Candidate>& candidates, const Plan& plan, const GemmArgs& args, void* C,
                       void* workspace, cudaStream_t stream);
  GemmTune tune_ = GemmTune::kOn;
  void* handle_ = nullptr;  // cublasLtHandle_t
  std::map<Key, std::unique_ptr<Plan>> plans_;
  std::map<Key, const Plan*> tuned_buckets_;  // key with M's bucket -> the plan tuned there (in plans_)
  // Page-locked host flags (and their device address) that hold the timing runs back until they
  // are all queued, so that the host's launch cost does not enter the GPU times (gemm.cu); null
  // device_flag_: timed without the hold.
  int* host_flag_ = nullptr;
  int* device_flag_ = nullptr;
  bool flag_tried_ = false;
};

}  // namespace rexnlu::backends::cuda
