// The CUDA backend: one GPU, one stream, device memory for the workspace and the weights, a
// cuBLASLt handle for the products. Its kernels are declared in backends/cuda/ops.h and gemm.h;
// the ops (src/ops) reach them through CudaBackend::of(backend).
//
// Precision: at fp16 / bf16 the dense layers' weights are converted ONCE at load to that type
// (make_linear, copy_as) and the activations are stored in that type too (activation_type(): the
// encoder's hidden states and intermediates, 16 bits end to end; scripts/test_gpu_engine.sh's
// parity and accuracy steps pass with them, docs/parity.md). REXNLU_CUDA_16BIT_ACTIVATIONS=0
// keeps fp32 activations instead (each linear layer then rounds its input to the weights' type;
// slower at large batches, docs/benchmarks.md). Products accumulate in fp32; layer-norm
// statistics, softmax and the link head (rotary, scores) are fp32 either way.
// upload() / download() are real copies on the stream; download() waits for the stream. Uploads go
// through page-locked host memory (host_scratch(), recycled by begin_pass(), which first waits
// for the previous pass's copies).
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "backends/backend.h"
#include "backends/cuda/common.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/ops.h"

namespace rexnlu::backends::cuda {

class CudaBackend final : public Backend {
 public:
  // Throws rexnlu::Error (kInvalidInput) naming what is missing when the device cannot be used
  // (no driver, no device, index out of range) or the precision is not fp32/fp16/bf16.
  CudaBackend(int device_index, Precision precision);
  ~CudaBackend() override;

  // `backend` as a CudaBackend (an op checked its device first).
  static CudaBackend& of(Backend& backend);

  std::string describe() const override;
  // Also makes this GPU current on the calling thread and, where a copy into or out of
  // host_scratch() may still be in flight (see synchronize()), waits for its stream.
  void begin_pass() override;
  void* host_scratch(size_t bytes) override;
  // Waits for the stream: every copy into or out of host_scratch() is over, so the next
  // begin_pass() need not wait again (a wait on an idle stream costs ~1.4 us on the H200, session 16).
  void synchronize(const char* what);
  // The same where the caller has just waited for stream() itself and enqueued nothing since.
  void mark_synchronized() { staging_settled_ = true; }
  // CUDA graphs: the first pass with a key runs body (plans made, workspace grown), the second
  // is captured into a graph and launched, later ones launch the graph while the workspace
  // keeps its blocks (Workspace::generation). REXNLU_CUDA_GRAPHS=0 turns this off.
  void run_recorded(const std::string& key, const std::function<void()>& body) override;
  bool replays_recordings() const override { return graphs_enabled_; }
  size_t recorded_graphs() const { return graphs_.size(); }
  uint64_t recordings_made() const { return graphs_recorded_; }
  ConstTensorRef upload(ConstTensorRef host) override;
  std::vector<ConstTensorRef> upload_all(const std::vector<ConstTensorRef>& hosts) override;
  TensorRef output_for(TensorRef host) override;
  void download(ConstTensorRef src, TensorRef host) override;
  Linear make_linear(ConstTensorRef weight, ConstTensorRef bias) override;
  // F32 host memory rounded on the device (on the stream, waited for) into F16 / BF16.
  Tensor copy_as(ConstTensorRef host, DType type) override;
  DType activation_type() const override;

  cudaStream_t stream() const { return stream_; }
  // The arithmetic type of --precision: F32, F16 or BF16 (the weights' storage type, and the
  // tensor-core type of the attention products).
  DType compute_type() const;
  // Where the attention uses the tensor-core kernel (AttentionArgs::tensor_cores): -1 (default) and
  // REXNLU_CUDA_MMA_ATTENTION=1 wherever supported, =0 never (the fp32-math kernel, a fallback).
  int attention_tensor_cores() const { return attention_tensor_cores_; }
  // Which tensor-core kernel (AttentionArgs::tc_kernel): the flash kernel where it applies
  // (REXNLU_CUDA_ATTENTION=fa, the default: ops.h) or always the WMMA one
  // (REXNLU_CUDA_ATTENTION=wmma, the fallback); another value throws from the constructor.
  TensorCoreKernel attention_kernel() const { return attention_kernel_; }
  // The flash kernel's key split at small grids (AttentionArgs::fa_split, ops.h): REXNLU_CUDA_FA_SPLIT=auto
  // (the default) or off (the unsplit kernel's bits everywhere); another value throws from the constructor.
  FlashSplit fa_split() const { return fa_split_; }
  // The flash kernel's position terms of contiguous positions by warp shuffles (AttentionArgs::fa_shuffle,
  // ops.h): REXNLU_CUDA_FA_SHUFFLE=on (the default) or off (through shared memory; the same bits);
  // another value throws from the constructor.
  bool fa_shuffle() const { return fa_shuffle_; }
  // Whether our kernels are launched with programmatic dependent launch (common.h, types.cuh):
  // on an sm_90+ device unless REXNLU_CUDA_PDL=0 (plain launches; below sm_90 always plain; measured
  // 1-3 % faster on the H200, docs/benchmarks.md session 12); another value throws from the constructor. Set process-wide
  // (set_programmatic_launch) at construction and at every begin_pass().
  bool programmatic_launch() const { return programmatic_launch_; }
  // REXNLU_CUDA_VERIFY=1 when this backend was made: the ops check each linear layer and attention
  // call against the host (ops/cuda_verify.h), and nothing is recorded.
  bool verifies_ops() const { return verify_ops_; }
  // Whether ops::linear's GELU (Activation::kGeluErf: the encoder's FFN up) runs in the product's
  // cuBLASLt epilogue, in its tanh form (gemm.h), for 16-bit outputs: the default at fp16 with
  // 16-bit activations. It differs from the exact erf GELU by at most 4.7e-4 (|x| ~ 2.7), about
  // the fp16 output's rounding there. At bf16 only with REXNLU_CUDA_GELU=tanh (its epilogue was
  // 4.7 ulps off at one small shape on the H200, session 12). REXNLU_CUDA_GELU=erf keeps the exact
  // GELU as a separate kernel after the product everywhere (as F32 outputs, fp32 and fp32
  // activations always do); another value throws from the constructor.
  bool gelu_epilogue() const { return gelu_epilogue_; }
  // Enqueues a product on the stream with this backend's cuBLASLt workspace.
  void gemm(const GemmArgs& args);
  // Whether a batch's masks should go to the kernels also as bits (DeviceBatch::mask_bits): their only
  // reader, the flash attention, runs on 16-bit activations alone.
  bool wants_mask_bits() const { return activation_type() != DType::kF32; }
  // One packed sequence of `length` rows as a DeviceBatch (offsets and, where wants_mask_bits(), the
  // mask's bits in the workspace: call inside a Workspace::Frame); positions and mask are device pointers.
  DeviceBatch one_sequence(int length, const int32_t* positions, const uint8_t* mask);

 protected:
  std::shared_ptr<void> allocate_persistent(size_t bytes) override;
  void copy_from_host(const void* host, void* device, size_t bytes) override;

 private:
  int index_;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<Blas> blas_;
  std::shared_ptr<void> blas_workspace_;
  size_t blas_workspace_bytes_ = 0;
  struct Graph;
  std::map<std::string, std::unique_ptr<Graph>> graphs_;
  std::map<std::string, int> passes_seen_;
  static constexpr size_t kMaxGraphs = 256;
  uint64_t graph_uses_ = 0;       // recordings made or replayed so far (orders them for eviction)
  uint64_t graphs_recorded_ = 0;  // recordings made so far (evicted ones included)
  bool graphs_enabled_ = true;
  bool verify_ops_ = false;
  bool staging_settled_ = true;  // no copy into or out of host_scratch() in flight since the last wait
  bool fp32_activations_ = false;  // true with REXNLU_CUDA_16BIT_ACTIVATIONS=0
  int attention_tensor_cores_ = -1;
  TensorCoreKernel attention_kernel_ = TensorCoreKernel::kFlash;
  FlashSplit fa_split_ = FlashSplit::kAuto;
  bool fa_shuffle_ = true;
  bool programmatic_launch_ = false;
  bool gelu_epilogue_ = false;
};

}  // namespace rexnlu::backends::cuda
