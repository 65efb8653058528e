// The CUDA backend: one GPU, one stream, device memory for the workspace and the weights, a
// cuBLASLt handle for the products. Its kernels are declared in backends/cuda/ops.h and gemm.h;
// the ops (src/ops) reach them through CudaBackend::of(backend).
//
// Precision: the dense layers' weights are converted ONCE at load to fp16 or bf16 when asked
// (make_linear); activations, layer norm, softmax, attention and the link scores stay fp32 (a
// linear layer rounds its input to the weights' type and accumulates in fp32).
// upload() / download() are real copies on the stream; download() waits for the stream.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "backends/backend.h"
#include "backends/cuda/common.h"
#include "backends/cuda/gemm.h"

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
  void begin_pass() override;  // also makes this GPU current on the calling thread
  ConstTensorRef upload(ConstTensorRef host) override;
  TensorRef output_for(TensorRef host) override;
  void download(ConstTensorRef src, TensorRef host) override;
  Linear make_linear(ConstTensorRef weight, ConstTensorRef bias) override;

  cudaStream_t stream() const { return stream_; }
  // Enqueues a product on the stream with this backend's cuBLASLt workspace.
  void gemm(const GemmArgs& args);
  // One packed sequence of `length` rows as a DeviceBatch (offsets in the workspace: call inside
  // a Workspace::Frame); positions and mask are device pointers.
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
};

}  // namespace rexnlu::backends::cuda
