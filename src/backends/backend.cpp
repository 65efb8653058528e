#include "backends/backend.h"

#include <cstring>
#include <string>

#include "backends/cpu/cpu_backend.h"
#if REXNLU_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device.h"
#endif
#include "rexnlu/error.h"
#include "rexnlu/gpu_memory.h"

namespace rexnlu::backends {

void Backend::begin_pass() {
  workspace_.reset();
  host_staging_.reset();
}

void Backend::run_recorded(const std::string&, const std::function<void()>& body) {
  const Workspace::Frame frame(workspace_);
  body();
}

std::vector<ConstTensorRef> Backend::upload_all(const std::vector<ConstTensorRef>& hosts) {
  std::vector<ConstTensorRef> out;
  out.reserve(hosts.size());
  for (const ConstTensorRef& h : hosts) out.push_back(upload(h));
  return out;
}

TensorRef Backend::alloc(DType dtype, std::initializer_list<int64_t> shape) {
  TensorRef r(nullptr, dtype, shape, device_);
  r.data = static_cast<std::byte*>(workspace_.alloc<std::byte>(static_cast<size_t>(r.numel()) * dtype_size(dtype)));
  return r;
}

Tensor Backend::alloc_tensor(DType dtype, std::initializer_list<int64_t> shape) {
  TensorRef r(nullptr, dtype, shape, device_);
  std::shared_ptr<void> storage = allocate_persistent(static_cast<size_t>(r.numel()) * dtype_size(dtype));
  r.data = static_cast<std::byte*>(storage.get());
  return Tensor(std::move(storage), r);
}

Tensor Backend::copy_of(ConstTensorRef host) {
  if (!host.contiguous()) throw InternalError("Backend::copy_of: " + rexnlu::describe(host) + " is not contiguous");
  const size_t bytes = static_cast<size_t>(host.numel()) * dtype_size(host.dtype);
  std::shared_ptr<void> storage = allocate_persistent(bytes);
  TensorRef r(static_cast<std::byte*>(storage.get()), host.dtype, {}, device_);
  r.rank = host.rank;
  r.shape = host.shape;
  r.strides = host.strides;
  copy_from_host(host.data, r.data, bytes);
  return Tensor(std::move(storage), r);
}

Tensor Backend::copy_as(ConstTensorRef host, DType type) {
  if (type != host.dtype)
    throw InternalError("Backend::copy_as: " + rexnlu::describe(host) + " as " + std::string(dtype_name(type)) +
                        ": this backend stores it as given only");
  return copy_of(host);
}

Linear Backend::make_linear(ConstTensorRef weight, ConstTensorRef bias) {
  if (precision_ != Precision::kFloat32)
    throw InternalError("Backend::make_linear: precision " + std::string(precision_name(precision_)) + " not implemented");
  return plain_linear(weight, bias);
}

Linear Backend::plain_linear(ConstTensorRef weight, ConstTensorRef bias) {
  Linear l;
  l.weight = copy_of(weight);
  if (!bias.empty()) l.bias = copy_of(bias);
  return l;
}

Linear Backend::make_linear_as(LinearRole, ConstTensorRef weight, ConstTensorRef bias) {
  return make_linear(weight, bias);
}

std::unique_ptr<Backend> make_backend(const LoadOptions& o) {
  if (o.threads < 0) throw InputError("threads must be >= 0 (0 = one per core), got " + std::to_string(o.threads));
  std::unique_ptr<Backend> backend;
  switch (o.device) {
    case Device::kCpu:
      cpu::check_precision(o.precision);
      backend = std::make_unique<cpu::CpuBackend>(o.threads, o.precision);
      break;
    case Device::kCuda:
#if REXNLU_HAVE_CUDA
      backend = std::make_unique<cuda::CudaBackend>(o.device_index, o.precision);
      break;
#else
      throw InputError("device cuda: this build has no CUDA backend");
#endif
  }
  if (backend) {
    backend->workspace().set_limit(o.workspace_limit_bytes);
    return backend;
  }
  throw InternalError("make_backend: unknown device");
}

std::vector<Device> available_devices() {
#if REXNLU_HAVE_CUDA
  if (cuda::probe_device(0).usable) return {Device::kCpu, Device::kCuda};
#endif
  return {Device::kCpu};
}

}  // namespace rexnlu::backends

namespace rexnlu {

std::vector<GpuMemory> gpu_memory() {
  std::vector<GpuMemory> out;
#if REXNLU_HAVE_CUDA
  for (const backends::cuda::TrackedMemory& t : backends::cuda::tracked_memory()) {
    GpuMemory m;
    m.device = t.device;
    m.held_bytes = t.held_bytes;
    int current = 0;
    size_t free = 0, total = 0;
    if (cudaGetDevice(&current) == cudaSuccess && cudaSetDevice(t.device) == cudaSuccess &&
        cudaMemGetInfo(&free, &total) == cudaSuccess) {
      m.free_bytes = static_cast<int64_t>(free);
      m.total_bytes = static_cast<int64_t>(total);
    }
    cudaGetLastError();
    cudaSetDevice(current);
    out.push_back(m);
  }
#endif
  return out;
}

}  // namespace rexnlu
