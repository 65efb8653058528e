#include "backends/cpu/cpu_backend.h"

#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "backends/cpu/gemm.h"
#include "rexnlu/error.h"

namespace rexnlu::backends::cpu {

CpuBackend::CpuBackend(int threads)
    : Backend(Device::kCpu, Precision::kFloat32, Workspace::host_allocator()), threads_(threads) {}

std::string CpuBackend::describe() const {
  const int threads = threads_ > 0 ? threads_ : omp_get_max_threads();
  return "cpu, " + std::to_string(threads) + " threads, fp32, " + blas_name();
}

void CpuBackend::begin_pass() {
  Backend::begin_pass();
  if (threads_ > 0 && omp_get_max_threads() != threads_) omp_set_num_threads(threads_);
}

void CpuBackend::download(ConstTensorRef src, TensorRef host) {
  if (src.data == host.data) return;
  if (src.dtype != host.dtype || src.numel() != host.numel() || !src.contiguous() || !host.contiguous())
    throw InternalError("CpuBackend::download: " + rexnlu::describe(src) + " into " + rexnlu::describe(host));
  std::memcpy(host.data, src.data, static_cast<size_t>(src.numel()) * dtype_size(src.dtype));
}

std::shared_ptr<void> CpuBackend::allocate_persistent(size_t bytes) {
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (p == nullptr) throw std::bad_alloc();
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

void CpuBackend::copy_from_host(const void* host, void* device, size_t bytes) {
  if (bytes) std::memcpy(device, host, bytes);
}

}  // namespace rexnlu::backends::cpu
