// Bounded caches keyed in a std::map whose entries record their last use (a counter): dropping
// the least recently used one when the cache is full (CUDA recordings, oneDNN primitives).
#pragma once

#include <algorithm>

namespace rexnlu::backends {

// Erases the entry of `cache` (not empty) whose last_use(value) is smallest.
template <typename Map, typename LastUse>
void erase_least_recent(Map& cache, LastUse last_use) {
  const auto oldest = std::min_element(cache.begin(), cache.end(), [&](const auto& a, const auto& b) {
    return last_use(a.second) < last_use(b.second);
  });
  cache.erase(oldest);
}

}  // namespace rexnlu::backends
