#include "tensor/workspace.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "rexnlu/error.h"

namespace rexnlu {

namespace {
constexpr size_t kAlign = 64;  // a cache line; also what AVX-512 loads would want
size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
}  // namespace

Workspace::Allocator Workspace::host_allocator() {
  return {[](size_t bytes) { return std::aligned_alloc(kAlign, bytes); }, [](void* p) { std::free(p); }};
}

Workspace::Block Workspace::make_block(size_t bytes) const {
  Block b;
  b.size = round_up(std::max<size_t>(bytes, kAlign));
  const auto mib = [](size_t n) { return std::to_string((n + (1u << 20) - 1) >> 20) + " MiB"; };
  const size_t held = capacity_bytes();
  if (limit_ != 0 && held + b.size > limit_)
    throw Error(ErrorKind::kOutOfMemory, "out of memory: the forward pass needs " + mib(held + b.size) +
                                             " of scratch " + allocator_.memory + ", over the limit of " + mib(limit_));
  auto* p = static_cast<std::byte*>(allocator_.allocate(b.size));
  if (p == nullptr)
    throw Error(ErrorKind::kOutOfMemory, "out of memory: could not allocate " + mib(b.size) + " more of scratch " +
                                             allocator_.memory + " for the forward pass (" + mib(held) + " held)");
  b.data = std::unique_ptr<std::byte[], Release>(p, Release{allocator_.release});
  return b;
}

void Workspace::reset() {
  if (blocks_.size() > 1 || (!blocks_.empty() && blocks_[0].size < peak_total_)) {
    blocks_.clear();  // merge: one block big enough for the largest pass so far
    ++generation_;
    blocks_.push_back(make_block(peak_total_));
  }
  for (Block& b : blocks_) b.used = 0;
  current_ = 0;
  used_total_ = 0;
}

void* Workspace::alloc_bytes(size_t bytes) {
  const size_t need = round_up(std::max<size_t>(bytes, 1));
  // Move on to the next block (empty, released by a Frame) or add one; the rest of the current
  // block stays unused until reset() merges the blocks.
  while (!blocks_.empty() && blocks_[current_].size - blocks_[current_].used < need && current_ + 1 < blocks_.size()) {
    ++current_;
  }
  if (blocks_.empty() || blocks_[current_].size - blocks_[current_].used < need) {
    if (used_total_ == 0 && !blocks_.empty()) blocks_.clear();  // nothing handed out yet: one new block instead
    ++generation_;
    try {
      blocks_.push_back(make_block(std::max(need, peak_total_ - std::min(peak_total_, used_total_))));
    } catch (const Error&) {
      // Out of memory: let the next reset() make one block for what this pass needed so far,
      // where that fits, so a retry of the same pass can get further (or through).
      if (limit_ == 0 || used_total_ + need <= limit_) peak_total_ = std::max(peak_total_, used_total_ + need);
      current_ = blocks_.empty() ? 0 : current_;
      throw;
    }
    current_ = blocks_.size() - 1;
  }
  Block& b = blocks_[current_];
  void* p = b.data.get() + b.used;
  b.used += need;
  used_total_ += need;
  peak_total_ = std::max(peak_total_, used_total_);
  return p;
}

void Workspace::release(size_t block, size_t block_used, size_t used_total) {
  // Blocks added inside the frame stay (reset() merges them) and are reused by the next buffers.
  // Within one block allocations are stack-like, so one block of peak_total_ bytes always fits.
  for (size_t i = block + 1; i < blocks_.size(); ++i) blocks_[i].used = 0;
  if (!blocks_.empty()) blocks_[block].used = block_used;
  current_ = block;
  used_total_ = used_total;
}

size_t Workspace::capacity_bytes() const {
  size_t n = 0;
  for (const Block& b : blocks_) n += b.size;
  return n;
}

}  // namespace rexnlu
