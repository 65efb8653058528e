#include "backends/cuda/gemm.h"

#include <cublasLt.h>

#include <string>

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

}  // namespace

struct Blas::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (desc) cublasLtMatmulDescDestroy(desc);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
  }
};

struct Blas::Algo {
  cublasLtMatmulAlgo_t algo{};
  bool usable = false;  // the heuristic had one for the bucket's M
};

int Blas::row_bucket(int M) {
  int b = 16;
  while (b < M && b < (1 << 30)) b *= 2;
  return b;
}

Blas::Blas(AlgoChoice choice, size_t max_plans) : choice_(choice), max_plans_(max_plans > 0 ? max_plans : 1) {
  cublasLtHandle_t h = nullptr;
  check_lt(cublasLtCreate(&h), "create");
  handle_ = h;
}

Blas::~Blas() {
  plans_.clear();
  bucket_algos_.clear();
  if (handle_) cublasLtDestroy(static_cast<cublasLtHandle_t>(handle_));
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
                align_bias, g.gelu_tanh};
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    if (plans_.size() >= max_plans_) plans_.clear();  // bounded (a recorded graph keeps no plan)
    auto p = std::make_unique<Plan>();
    const cudaDataType_t ab = cuda_type(g.ab_type), ct = cuda_type(g.c_type);
    check_lt(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "matmul desc");
    const cublasOperation_t op_a = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = CUBLAS_OP_N;
    check_lt(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a), "transa");
    check_lt(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b), "transb");
    if (g.bias || g.gelu_tanh) {
      const cublasLtEpilogue_t epi = !g.gelu_tanh ? CUBLASLT_EPILOGUE_BIAS
                                     : g.bias     ? CUBLASLT_EPILOGUE_GELU_BIAS
                                                  : CUBLASLT_EPILOGUE_GELU;
      check_lt(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi), "epilogue");
    }
    if (g.bias)
      check_lt(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &ct, sizeof ct),
               "bias type");
    // cuBLAS A = our B: column-major [K, N] when trans_b (B row-major [N, K]), else [N, K].
    check_lt(g.trans_b ? cublasLtMatrixLayoutCreate(&p->a, ab, g.K, g.N, g.ldb)
                       : cublasLtMatrixLayoutCreate(&p->a, ab, g.N, g.K, g.ldb),
             "layout A");
    check_lt(cublasLtMatrixLayoutCreate(&p->b, ab, g.K, g.M, g.lda), "layout B");
    check_lt(cublasLtMatrixLayoutCreate(&p->c, ct, g.N, g.M, g.ldc), "layout C");

    cublasLtMatmulPreference_t pref = nullptr;
    check_lt(cublasLtMatmulPreferenceCreate(&pref), "preference");
    const std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, cublasStatus_t (*)(cublasLtMatmulPreference_t)>
        pref_owner(pref, cublasLtMatmulPreferenceDestroy);
    const uint32_t aa = static_cast<uint32_t>(align_a), ab_ = static_cast<uint32_t>(align_b),
                   ac = static_cast<uint32_t>(align_c);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                         sizeof workspace_bytes);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aa, sizeof aa);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ab_, sizeof ab_);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ac, sizeof ac);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ac, sizeof ac);
    const auto lt = static_cast<cublasLtHandle_t>(handle_);
    // The heuristic's first choice for the row count of layouts b and c into *algo; its status.
    auto heuristic = [&](cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatmulAlgo_t* algo) {
      cublasLtMatmulHeuristicResult_t result{};
      int found = 0;
      ++heuristic_calls_;
      cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(lt, p->desc, p->a, b, c, c, pref, 1, &result, &found);
      if (hs == CUBLAS_STATUS_SUCCESS && found == 0) hs = CUBLAS_STATUS_NOT_SUPPORTED;
      if (hs == CUBLAS_STATUS_SUCCESS) *algo = result.algo;
      return hs;
    };
    // Under kPerBucket (16-bit inputs): the bucket's algorithm, found once for the bucket's M, if
    // cuBLASLt accepts it for this exact shape within the workspace.
    bool have_algo = false;
    if (choice_ == AlgoChoice::kPerBucket && g.ab_type != DType::kF32) {
      Key bucket_key = key;
      const int bucket_m = row_bucket(g.M);
      std::get<1>(bucket_key) = bucket_m;
      auto b_it = bucket_algos_.find(bucket_key);
      if (b_it == bucket_algos_.end()) {
        auto found = std::make_unique<Algo>();
        cublasStatus_t hs;
        if (bucket_m == g.M) {
          hs = heuristic(p->b, p->c, &found->algo);
        } else {
          cublasLtMatrixLayout_t bb = nullptr, bc = nullptr;
          check_lt(cublasLtMatrixLayoutCreate(&bb, ab, g.K, bucket_m, g.lda), "layout B");
          const cublasStatus_t cs = cublasLtMatrixLayoutCreate(&bc, ct, g.N, bucket_m, g.ldc);
          hs = cs == CUBLAS_STATUS_SUCCESS ? heuristic(bb, bc, &found->algo) : cs;
          cublasLtMatrixLayoutDestroy(bb);
          if (bc) cublasLtMatrixLayoutDestroy(bc);
        }
        found->usable = hs == CUBLAS_STATUS_SUCCESS;
        b_it = bucket_algos_.emplace(bucket_key, std::move(found)).first;
      }
      if (b_it->second->usable) {
        cublasLtMatmulHeuristicResult_t check{};
        if (cublasLtMatmulAlgoCheck(lt, p->desc, p->a, p->b, p->c, p->c, &b_it->second->algo, &check) ==
                CUBLAS_STATUS_SUCCESS &&
            check.workspaceSize <= workspace_bytes) {
          p->algo = b_it->second->algo;
          have_algo = true;
        }
      }
    }
    if (!have_algo) {
      const cublasStatus_t hs = heuristic(p->b, p->c, &p->algo);
      if (hs != CUBLAS_STATUS_SUCCESS)
        throw InternalError("cuBLASLt has no algorithm for M=" + std::to_string(g.M) + " N=" + std::to_string(g.N) +
                            " K=" + std::to_string(g.K) +
                            (g.gelu_tanh ? " with the GELU epilogue (REXNLU_CUDA_GELU=erf does without it)" : "") +
                            " (" + status_name(hs) + ")");
    }
    it = plans_.emplace(key, std::move(p)).first;
  }
  Plan& p = *it->second;
  if (g.bias)
    check_lt(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof g.bias),
             "bias pointer");
  check_lt(cublasLtMatmul(static_cast<cublasLtHandle_t>(handle_), p.desc, &g.alpha, g.B, p.a, g.A, p.b, &g.beta,
                          g.C, p.c, g.C, p.c, &p.algo, workspace, workspace_bytes, stream),
           "matmul");
}

}  // namespace rexnlu::backends::cuda
