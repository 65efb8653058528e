// Named tensors read from a checkpoint file. The store owns the bytes (a read-only memory
// map of the file where the format allows zero-copy, or buffers it filled itself) and hands
// out views that live as long as the store. F16 and BF16 tensors are widened to F32 when they
// are added (every network computes from F32 weights; a backend narrows them again where it runs
// in 16 bits), so a checkpoint stored in 16 bits loads like its F32 original; stored_dtype()
// still tells what the file held.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor_view.h"

namespace rexnlu::io {

class TensorStore {
 public:
  TensorStore() = default;
  TensorStore(TensorStore&&) noexcept = default;
  TensorStore& operator=(TensorStore&&) noexcept = default;

  const TensorView* find(const std::string& name) const;  // nullptr when absent
  const TensorView& at(const std::string& name) const;    // throws rexnlu::Error (kInvalidModel)
  std::vector<std::string> names() const;                 // sorted
  size_t size() const { return tensors_.size(); }
  DType stored_dtype(const std::string& name) const;     // the dtype in the file (F16 for a widened tensor)
  const std::filesystem::path& source() const { return source_; }

  // For the readers: keep `owner` alive with the store, register views into its bytes.
  void keep_alive(std::shared_ptr<const void> owner) { owners_.push_back(std::move(owner)); }
  void add(std::string name, TensorView view);  // throws on a duplicate name; widens F16/BF16 to F32
  void set_source(std::filesystem::path p) { source_ = std::move(p); }
  // Returns `p` when it is aligned for `dtype`, else a copy of its `nbytes` bytes in a buffer
  // the store owns (kernels may read the data as float/int64 directly, which needs alignment).
  const std::byte* aligned_bytes(const std::byte* p, size_t nbytes, DType dtype);

 private:
  std::map<std::string, TensorView> tensors_;
  std::map<std::string, DType> widened_;  // name -> dtype in the file, for the tensors add() widened
  std::vector<std::shared_ptr<const void>> owners_;
  std::filesystem::path source_;
};

}  // namespace rexnlu::io
