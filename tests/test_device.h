// The device and precision the model-level tests run on: CPU fp32 unless REXNLU_TEST_DEVICE
// (cpu, cuda, cuda:N) and REXNLU_TEST_PRECISION (fp32, fp16, bf16) say otherwise. The GPU
// machine's script (scripts/test_gpu_engine.sh) runs the parity tests on the GPU this way.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "backends/backend.h"
#include "rexnlu/load_options.h"

namespace rexnlu::testing {

inline LoadOptions test_load_options() {
  LoadOptions o;
  if (const char* d = std::getenv("REXNLU_TEST_DEVICE"); d && *d && !parse_device_spec(d, o))
    throw std::runtime_error(std::string("REXNLU_TEST_DEVICE: not a device: ") + d);
  if (const char* p = std::getenv("REXNLU_TEST_PRECISION"); p && *p) {
    const auto precision = parse_precision(p);
    if (!precision) throw std::runtime_error(std::string("REXNLU_TEST_PRECISION: not a precision: ") + p);
    o.precision = *precision;
  }
  return o;
}

// Whether this build found a usable GPU (CUDA compiled in, a driver and a device): tests that need
// one skip with "no usable GPU" without it, so that a run on a machine without a GPU says so.
inline bool has_gpu() {
  const auto devices = backends::available_devices();
  return std::find(devices.begin(), devices.end(), Device::kCuda) != devices.end();
}

}  // namespace rexnlu::testing
