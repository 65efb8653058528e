// Scratch memory for a forward pass, reused across calls so that the hot loop never allocates.
// A bump allocator: reset() at the start of a pass, then alloc() buffers that live until the
// next reset(). When a pass needs more than the current block, an extra block is added for the
// rest of that pass, and the next reset() merges everything into one block of the peak size, so
// steady-state passes of the same (or smaller) shape allocate nothing.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace rexnlu {

class Workspace {
 public:
  Workspace() = default;
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  // Forgets all buffers handed out since the last reset (their memory is reused).
  void reset();

  // `count` uninitialised elements of T, 64-byte aligned. Valid until the next reset().
  template <typename T>
  T* alloc(size_t count) {
    return static_cast<T*>(alloc_bytes(count * sizeof(T)));
  }

  size_t capacity_bytes() const;  // bytes currently reserved (for tests and stats)
  size_t used_bytes() const { return used_total_; }
  int block_count() const { return static_cast<int>(blocks_.size()); }

 private:
  struct AlignedFree {
    void operator()(std::byte* p) const;
  };
  struct Block {
    std::unique_ptr<std::byte[], AlignedFree> data;
    size_t size = 0;
    size_t used = 0;
  };

  void* alloc_bytes(size_t bytes);
  static Block make_block(size_t bytes);

  std::vector<Block> blocks_;
  size_t used_total_ = 0;
  size_t peak_total_ = 0;  // largest used_total_ seen in one pass
};

}  // namespace rexnlu
