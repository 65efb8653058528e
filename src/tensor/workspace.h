// Scratch memory for a forward pass, reused across calls so that the hot loop never allocates.
// A bump allocator: reset() at the start of a pass, then alloc() buffers that live until the
// next reset(), or until the end of the enclosing Frame: a layer's buffers are released when the
// layer is done, so the peak is one layer's worth, not the sum over all layers. When a pass needs
// more than the current block, an extra block is added for the rest of that pass, and the next
// reset() merges everything into one block of the peak size, so steady-state passes of the same
// (or smaller) shape allocate nothing. The blocks are host memory unless the owner (a device
// backend) passes its own allocator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace rexnlu {

class Workspace {
 public:
  // Where blocks come from: 64-byte aligned host memory by default.
  struct Allocator {
    void* (*allocate)(size_t bytes);  // nullptr when out of memory
    void (*release)(void* p);
    const char* memory = "host memory";  // named in the out-of-memory error
  };
  static Allocator host_allocator();

  explicit Workspace(Allocator allocator = host_allocator()) : allocator_(allocator) {}
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  // Forgets all buffers handed out since the last reset (their memory is reused).
  void reset();

  // `count` uninitialised elements of T, 64-byte aligned. Valid until the next reset().
  template <typename T>
  T* alloc(size_t count) {
    return static_cast<T*>(alloc_bytes(count * sizeof(T)));
  }

  // Buffers allocated while a Frame lives are released when it ends (frames nest like scopes).
  class Frame {
   public:
    explicit Frame(Workspace& ws)
        : ws_(ws), block_(ws.current_), used_(ws.blocks_.empty() ? 0 : ws.blocks_[ws.current_].used),
          total_(ws.used_total_) {}
    ~Frame() { ws_.release(block_, used_, total_); }
    Frame(const Frame&) = delete;
    Frame& operator=(const Frame&) = delete;

   private:
    Workspace& ws_;
    size_t block_, used_, total_;  // the state to return to: current block, its use, total use
  };

  size_t capacity_bytes() const;  // bytes currently reserved (for tests and stats)
  // Changes whenever a block is allocated or freed (addresses handed out before may then differ
  // for the same sequence of allocations; a recorded device pass must not be replayed).
  uint64_t generation() const { return generation_; }
  // Caps capacity_bytes() (0 = no cap). Growing past it, or an allocator returning nullptr,
  // throws rexnlu::Error (ErrorKind::kOutOfMemory) naming the bytes and the memory. The
  // workspace stays usable: the next reset() merges its blocks into one that also holds what
  // the failed pass had asked for (when that is within the cap), and a pass that has not
  // allocated yet replaces the blocks it would outgrow.
  void set_limit(size_t bytes) { limit_ = bytes; }
  size_t limit() const { return limit_; }
  size_t used_bytes() const { return used_total_; }
  int block_count() const { return static_cast<int>(blocks_.size()); }

 private:
  struct Release {
    Release() noexcept : release(nullptr) {}
    explicit Release(void (*r)(void*)) noexcept : release(r) {}
    void operator()(std::byte* p) const { release(p); }
    void (*release)(void*);
  };
  struct Block {
    std::unique_ptr<std::byte[], Release> data;
    size_t size = 0;
    size_t used = 0;
  };

  void* alloc_bytes(size_t bytes);
  void release(size_t block, size_t block_used, size_t used_total);
  Block make_block(size_t bytes) const;

  Allocator allocator_;
  // Blocks are filled in order; blocks_[current_] takes the next buffer, later ones are empty.
  std::vector<Block> blocks_;
  size_t current_ = 0;
  size_t used_total_ = 0;
  size_t peak_total_ = 0;  // largest used_total_ seen so far
  size_t limit_ = 0;
  uint64_t generation_ = 0;
};

}  // namespace rexnlu
