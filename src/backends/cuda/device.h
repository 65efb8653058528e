// Can this process use CUDA device `index`? Answers with a reason a user can act on, never
// throws or aborts: no driver, a driver too old for this runtime, no device, index out of range.
#pragma once

#include <cstddef>
#include <string>

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

// One line for logs: "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB), CUDA runtime 13.0, driver 13.0".
std::string describe(const DeviceInfo& info);

}  // namespace rexnlu::backends::cuda
