#include "backends/cuda/common.h"

#include <atomic>
#include <string>

#include "rexnlu/error.h"

namespace rexnlu::backends::cuda {

void require_float_type(DType type, const char* what) {
  if (type != DType::kF32 && type != DType::kF16 && type != DType::kBF16)
    throw InternalError(std::string(what) + ": element type " + std::string(dtype_name(type)) +
                        " is not F32, F16 or BF16");
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw InternalError(std::string(what) + ": " + cudaGetErrorName(status) + " (" +
                        cudaGetErrorString(status) + ")");
}

void check_launch(const char* kernel) { check(cudaGetLastError(), kernel); }

namespace {
std::atomic<bool> g_programmatic_launch{false};
}  // namespace

void set_programmatic_launch(bool on) { g_programmatic_launch.store(on, std::memory_order_relaxed); }
bool programmatic_launch() { return g_programmatic_launch.load(std::memory_order_relaxed); }

bool query_device_limits(DeviceLimits& limits) {
  int device = 0;
  DeviceLimits l;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&l.major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&l.smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&l.sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
    return false;
  limits = l;
  return true;
}

DeviceLimits device_limits(const char* what) {
  DeviceLimits l;
  if (!query_device_limits(l)) {
    const cudaError_t e = cudaGetLastError();
    check(e == cudaSuccess ? cudaErrorNoDevice : e, what);
  }
  return l;
}

}  // namespace rexnlu::backends::cuda
