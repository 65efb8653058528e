#include "backends/cuda/device.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

namespace rexnlu::backends::cuda {

namespace {

std::string version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

// rexnlu's live device allocations: pointer -> (device, bytes), and the sum per device.
struct Tracker {
  std::mutex mutex;
  std::unordered_map<void*, std::pair<int, size_t>> blocks;
  std::map<int, int64_t> held;
};
Tracker& tracker() {
  static Tracker* t = new Tracker;  // never destroyed: frees may run during static destruction
  return *t;
}

}  // namespace

void* device_malloc(size_t bytes) {
  void* p = nullptr;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || cudaMalloc(&p, bytes) != cudaSuccess) {
    cudaGetLastError();  // out of memory is not sticky: clear it so later checks do not report it
    return nullptr;
  }
  Tracker& t = tracker();
  const std::lock_guard lock(t.mutex);
  t.blocks[p] = {device, bytes};
  t.held[device] += static_cast<int64_t>(bytes);
  return p;
}

void device_free(void* p) {
  if (p == nullptr) return;
  {
    Tracker& t = tracker();
    const std::lock_guard lock(t.mutex);
    if (auto it = t.blocks.find(p); it != t.blocks.end()) {
      t.held[it->second.first] -= static_cast<int64_t>(it->second.second);
      t.blocks.erase(it);
    }
  }
  cudaFree(p);
}

std::vector<TrackedMemory> tracked_memory() {
  Tracker& t = tracker();
  const std::lock_guard lock(t.mutex);
  std::vector<TrackedMemory> out;
  for (const auto& [device, bytes] : t.held) out.push_back({device, bytes});
  return out;
}

DeviceInfo probe_device(int index) {
  DeviceInfo info;
  // The static runtime loads the driver library on first use; look for it ourselves first so
  // that "no driver" is named as such (the runtime only says "insufficient driver").
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) {
    info.reason = "no NVIDIA driver found (libcuda.so.1)";
    return info;
  }
  dlclose(driver);
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaErrorNoDevice || (status == cudaSuccess && count == 0)) {
    info.reason = "no CUDA device";
    return info;
  }
  if (status == cudaErrorInsufficientDriver) {
    int driver_version = 0;
    cudaDriverGetVersion(&driver_version);
    info.reason = "NVIDIA driver (CUDA " + version_string(driver_version) + ") is older than the CUDA runtime " +
                  version_string(CUDART_VERSION) + " rexnlu was built with";
    return info;
  }
  if (status != cudaSuccess) {
    info.reason = std::string("CUDA unusable: ") + cudaGetErrorString(status);
    return info;
  }
  info.device_count = count;
  if (index < 0 || index >= count) {
    info.reason = "device index " + std::to_string(index) + " out of range: " + std::to_string(count) + " device(s)";
    return info;
  }
  cudaDeviceProp prop{};
  if (const cudaError_t e = cudaGetDeviceProperties(&prop, index); e != cudaSuccess) {
    info.reason = "device " + std::to_string(index) + ": " + cudaGetErrorString(e);
    return info;
  }
  info.name = prop.name;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.total_memory = prop.totalGlobalMem;
  info.multiprocessors = prop.multiProcessorCount;
  if (prop.major * 10 + prop.minor < 75) {
    info.reason = "device " + std::to_string(index) + " (" + info.name + ") is sm_" + std::to_string(prop.major) +
                  std::to_string(prop.minor) + "; rexnlu needs sm_75 or newer";
    return info;
  }
  info.usable = true;
  return info;
}

std::string describe(const DeviceInfo& info) {
  if (!info.usable) return info.reason;
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  char mem[32];
  std::snprintf(mem, sizeof mem, "%.1f GiB", static_cast<double>(info.total_memory) / (1024.0 * 1024 * 1024));
  return info.name + " (sm_" + std::to_string(info.cc_major) + std::to_string(info.cc_minor) + ", " +
         std::to_string(info.multiprocessors) + " SMs, " + mem + "), CUDA runtime " + version_string(runtime) +
         ", driver " + version_string(driver);
}

}  // namespace rexnlu::backends::cuda
