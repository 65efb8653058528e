// Overflow-checked size arithmetic for the checkpoint readers: every length and offset read
// from a file goes through these, so a hostile header cannot wrap an addition or product
// around and pass a bounds check.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>

namespace rexnlu::io {

inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// True when [offset, offset + length) lies inside a buffer of `size` bytes.
inline bool range_fits(uint64_t offset, uint64_t length, uint64_t size) {
  return offset <= size && length <= size - offset;
}

// Number of elements of a shape (each dimension >= 0), or nullopt on overflow of int64.
inline std::optional<uint64_t> checked_numel(const int64_t* dims, size_t rank) {
  uint64_t n = 1;
  for (size_t i = 0; i < rank; ++i) {
    if (dims[i] < 0) return std::nullopt;
    auto m = checked_mul(n, static_cast<uint64_t>(dims[i]));
    if (!m || *m > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    n = *m;
  }
  return n;
}

}  // namespace rexnlu::io
