// Matrix products on the GPU through cuBLASLt, row-major like backends::cpu::gemm:
//   C[M,N] = alpha * A[M,K] · op(B) + beta * C (+ bias[N] on every row)
// trans_b = true: B is [N,K] (nn.Linear weight), op(B) = B^T; false: B is [K,N].
// A and B share one storage type (F32, F16 or BF16); C is that type or F32. Accumulation is
// always fp32 (CUBLAS_COMPUTE_32F: no TF32 for F32 inputs, so F32 matches the CPU to ~1e-6).
// The bias runs as cuBLASLt's BIAS epilogue; with gelu_tanh, as its GELU_BIAS epilogue (GELU
// without a bias): the tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (PyTorch
// and XLA fuse only approximate="tanh" there; cuBLASLt's documentation names no formula, and
// tests/cuda GemmGeluEpilogueIsTheTanhFormOfGelu prints how near its results are to each form),
// not the exact erf GELU of the model (backends::cuda::gelu_erf): the two forms differ by at most
// 4.7e-4 (at |x| ~ 2.7). ops::linear asks for it only for 16-bit outputs, where that is of the
// order of the output's rounding (CudaBackend::gelu_epilogue).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <memory>
#include <tuple>

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
  bool gelu_tanh = false;      // then GELU, tanh form, in the epilogue (after alpha, beta and the bias)
};

// How a new shape gets its cuBLASLt algorithm. cuBLASLt's heuristic costs ~200 us per call in
// fp16 on the H200 (18.5 us in fp32; docs/benchmarks.md "Session 18"), and packed batches bring a
// new row count M with almost every new mix of requests.
//   kPerShape:  the heuristic for each exact shape.
//   kPerBucket: for F16 / BF16 inputs, the heuristic once per bucket of M (M rounded up to a power
//               of two, at least 16; asked for the bucket's M, so the choice, and the bits, depend
//               on the shape alone, never on which shapes came first), that algorithm reused for
//               every M in the bucket after cublasLtMatmulAlgoCheck accepts it for the exact shape
//               (else the heuristic for the exact shape). F32 inputs per shape all the same: their
//               heuristic is cheap and the bucket's algorithm measured slower (first passes of
//               SiameseUIE's requests: median 3.4 -> 3.7 ms).
enum class AlgoChoice { kPerShape, kPerBucket };

// One cuBLASLt handle with a cache of matmul plans (descriptors + the chosen algorithm) keyed by
// shape, types, strides, pointer alignment and epilogue; at most max_plans of them (then all are
// dropped and made again as needed: a service's packed batches bring new row counts without end;
// under kPerBucket a plan is made again without the heuristic). Not thread-safe: one per stream.
class Blas {
 public:
  explicit Blas(AlgoChoice choice = AlgoChoice::kPerBucket, size_t max_plans = 4096);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;

  // Enqueues the product on `stream`; `workspace` (device, may be null with bytes 0) is
  // cuBLASLt's scratch, 32 MiB is plenty on Hopper. Throws rexnlu::Error (kInternal) on bad
  // arguments or when cuBLASLt has no algorithm for them.
  void gemm(const GemmArgs& args, void* workspace, size_t workspace_bytes, cudaStream_t stream);

  size_t cached_plans() const { return plans_.size(); }
  // cublasLtMatmulAlgoGetHeuristic calls so far (what AlgoChoice saves).
  size_t heuristic_calls() const { return heuristic_calls_; }
  // The bucket of row counts that share an algorithm under kPerBucket: M rounded up to a power
  // of two, at least 16.
  static int row_bucket(int M);

 private:
  struct Plan;
  struct Algo;
  using Key = std::tuple<int, int, int, int, int, int, int, int, int, int, int, size_t, int, int, int, int>;
  void* handle_ = nullptr;  // cublasLtHandle_t
  AlgoChoice choice_;
  size_t max_plans_;
  size_t heuristic_calls_ = 0;
  std::map<Key, std::unique_ptr<Plan>> plans_;
  std::map<Key, std::unique_ptr<Algo>> bucket_algos_;  // Key with M = row_bucket(M)
};

}  // namespace rexnlu::backends::cuda
