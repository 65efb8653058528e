// Reproducible random test inputs, shared by the kernel and op tests (tests/ops, tests/backends,
// tests/cuda).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace rexnlu::testing {

// n values uniform in [lo, hi), the same for the same seed.
inline std::vector<float> random_vec(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

}  // namespace rexnlu::testing
