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
  // fp32: W packed once for oneDNN's matmul (Linear::prepared) where oneDNN packs on this CPU, and
  // then not kept plain too (backends/cpu/gemm.h), else W as given; int8: W quantized per output
  // channel (backends/cpu/gemm_int8.h); bf16: W rounded; int8 and bf16 also prepared once for their
  // kernels next to it (Linear::prepared: oneDNN's packed layout, or bf16 widened).
  Linear make_linear(ConstTensorRef weight, ConstTensorRef bias) override;
  // int8 keeps three roles above int8 (docs/accuracy.md: link-sign flips on the full-size weights,
  // VNNI CPU, L = 128 / 512: 1.25% / 1.35% all int8 -> 0.71% / 1.02%): the link head in bf16 where
  // the CPU has bf16 instructions (AMX, AVX-512 BF16; dnnl_has_bf16_instructions), else in fp32
  // (1.4% of the products); the attention and FFN output projections in bf16 there (AMX: about
  // int8's speed over the whole forward, docs/benchmarks.md), else int8 (fp32 or emulated bf16
  // would cost 4/9 of the products at fp32 speed).
  Linear make_linear_as(LinearRole role, ConstTensorRef weight, ConstTensorRef bias) override;

 protected:
  std::shared_ptr<void> allocate_persistent(size_t bytes) override;
  void copy_from_host(const void* host, void* device, size_t bytes) override;

 private:
  Linear make_linear_at(Precision precision, ConstTensorRef weight, ConstTensorRef bias);
  Precision precision_for(LinearRole role) const;  // the weights' precision of a layer of `role`
  int threads_;
};

}  // namespace rexnlu::backends::cpu
