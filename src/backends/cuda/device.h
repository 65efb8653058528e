// Can this process use CUDA device `index`? Answers with a reason a user can act on, never
// throws or aborts: no driver, a driver too old for this runtime, no device, index out of range.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rexnlu::backends::cuda {

struct DeviceInfo {
  bool usable = false;
  std::string reason;     // why not, when !usable (e.g. "no NVIDIA driver found (libcuda.so.1)")
  int device_count = 0;   // devices the driver reports (0 when there is no driver)
  std::string name;       // e.g. "NVIDIA H200"
  int cc_major = 0, cc_minor = 0;
  size_t total_memory = 0;  // bytes
  int multiprocessors = 0;
};

DeviceInfo probe_device(int index);

// cudaMalloc / cudaFree on the current device that keep count of rexnlu's bytes per device
// (tracked_memory(), for rexnlu::gpu_memory). device_malloc returns nullptr when the device is
// out of memory and clears that error, so that later launch checks do not report it.
void* device_malloc(size_t bytes);
void device_free(void* p);
struct TrackedMemory {
  int device;
  int64_t held_bytes;
};
std::vector<TrackedMemory> tracked_memory();  // devices that ever held an allocation

// One line for logs: "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB), CUDA runtime 13.0, driver 13.0".
std::string describe(const DeviceInfo& info);

}  // namespace rexnlu::backends::cuda
