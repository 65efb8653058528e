// How Engine::load runs a model: on which device, at which precision, with how many threads.
// A combination this build cannot run is refused at load with a rexnlu::Error that says so
// (e.g. "device cuda: this build has no CUDA backend").
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace rexnlu {

enum class Device { kCpu, kCuda };

// The number format of the weights of the dense layers (activations stay float32).
enum class Precision { kFloat32, kFloat16, kBFloat16, kInt8 };

struct LoadOptions {
  Device device = Device::kCpu;
  Precision precision = Precision::kFloat32;
  int threads = 0;  // CPU worker threads; 0 = OMP_NUM_THREADS or one per core
  int device_index = 0;  // which GPU for Device::kCuda ("cuda:N")
  // Cap on the scratch memory of forward passes (activations), in bytes; 0 = no cap. A pass that
  // would need more fails with ErrorKind::kOutOfMemory, as when the device itself runs out
  // (`serve` answers 503 and goes on). Also how tests provoke that failure without a full GPU.
  size_t workspace_limit_bytes = 0;
};

std::string_view device_name(Device d);           // "cpu", "cuda"
std::string_view precision_name(Precision p);     // "fp32", "fp16", "bf16", "int8"
std::optional<Device> parse_device(std::string_view name);        // the names above
// "cpu", "cuda" or "cuda:N" into options.device and options.device_index; false if malformed.
bool parse_device_spec(std::string_view spec, LoadOptions& options);
std::optional<Precision> parse_precision(std::string_view name);  // the names above, also "float32"...
// The precision the CLI, the HTTP service and the Python package pick when none is given: fp32 on
// the CPU, fp16 on a GPU (it decodes as fp32 on every measured set and is faster there:
// docs/accuracy.md, docs/benchmarks.md). LoadOptions' own default stays fp32 on every device.
Precision default_precision(Device device);

}  // namespace rexnlu
