// GPU memory as `rexnlu serve` reports it (/info, /metrics): for every GPU that a model of this
// process runs on, the bytes rexnlu holds there (weights, constants, scratch of the forward
// passes) and the device's free and total memory as the driver reports them (all processes).
#pragma once

#include <cstdint>
#include <vector>

namespace rexnlu {

struct GpuMemory {
  int device = 0;           // CUDA device index ("cuda:N")
  int64_t held_bytes = 0;   // allocated by rexnlu on it and not yet freed
  int64_t free_bytes = -1;  // the driver's cudaMemGetInfo; -1 when it could not be asked
  int64_t total_bytes = -1;
};

// Empty in a build without CUDA and before a model was loaded on a GPU.
std::vector<GpuMemory> gpu_memory();

}  // namespace rexnlu
