// The CPU backend: host memory, an OpenMP team of worker threads, BLAS for the products
// (backends/cpu/gemm.cpp). Its kernels are the functions declared next to it (backends/cpu/*.h).
#pragma once

#include "backends/backend.h"

namespace rexnlu::backends::cpu {

// Throws rexnlu::Error (kInvalidInput) when this build or this CPU cannot run `precision`:
// fp32, int8 and bf16 run everywhere (int8 and bf16 need the oneDNN build; bf16 is emulated in fp32
// where oneDNN has no bf16 kernel); fp16 is not implemented on the CPU.
void check_precision(Precision precision);

class CpuBackend final : public Backend {
 public:
  // threads 0: leave OpenMP's default (OMP_NUM_THREADS or one per core). check_precision first.
  CpuBackend(int threads, Precision precision = Precision::kFloat32);

  std::string describe() const override;
  // Also sets the calling thread's OpenMP team size (the ICV is per thread: the server's batcher
  // thread runs the passes, not the thread that loaded the model).
  void begin_pass() override;
  ConstTensorRef upload(ConstTensorRef host) override { return host; }
  TensorRef output_for(TensorRef host) override { return host; }
  void download(ConstTensorRef src, TensorRef host) override;
  // fp32: W as given; int8: W quantized per output channel (backends/cpu/gemm_int8.h); all three
  // also prepared once for their kernels (Linear::prepared: oneDNN's packed layout, or bf16 widened;
  // fp32 only where oneDNN packs, backends/cpu/gemm.h).
  Linear make_linear(ConstTensorRef weight, ConstTensorRef bias) override;

 protected:
  std::shared_ptr<void> allocate_persistent(size_t bytes) override;
  void copy_from_host(const void* host, void* device, size_t bytes) override;

 private:
  int threads_;
};

}  // namespace rexnlu::backends::cpu
