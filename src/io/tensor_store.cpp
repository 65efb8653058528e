#include "io/tensor_store.h"

#include <cstdint>
#include <cstring>

#include "rexnlu/error.h"

namespace rexnlu::io {

const TensorView* TensorStore::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const TensorView& TensorStore::at(const std::string& name) const {
  const TensorView* v = find(name);
  if (!v) throw ModelError(source_.string() + ": tensor '" + name + "' not found");
  return *v;
}

std::vector<std::string> TensorStore::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const auto& [name, view] : tensors_) out.push_back(name);
  return out;
}

void TensorStore::add(std::string name, TensorView view) {
  auto [it, inserted] = tensors_.emplace(std::move(name), std::move(view));
  if (!inserted) throw ModelError(source_.string() + ": duplicate tensor name '" + it->first + "'");
}

const std::byte* TensorStore::aligned_bytes(const std::byte* p, size_t nbytes, DType dtype) {
  if (reinterpret_cast<uintptr_t>(p) % dtype_size(dtype) == 0) return p;
  // operator new[] returns memory aligned for any fundamental type.
  std::shared_ptr<std::byte[]> copy(new std::byte[nbytes]);
  std::memcpy(copy.get(), p, nbytes);
  const std::byte* out = copy.get();
  keep_alive(std::move(copy));
  return out;
}

}  // namespace rexnlu::io
