// The device and precision the model-level tests run on: CPU fp32 unless REXNLU_TEST_DEVICE
// (cpu, cuda, cuda:N) and REXNLU_TEST_PRECISION (fp32, fp16, bf16) say otherwise. The GPU
// machine's script (scripts/test_gpu_engine.sh) runs the parity tests on the GPU this way.
#pragma once

#include <cstdlib>
#include <stdexcept>
#include <string>

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

}  // namespace rexnlu::testing
