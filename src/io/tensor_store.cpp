#include "io/tensor_store.h"

#include <cstdint>
#include <cstring>

#include "rexnlu/error.h"
#include "tensor/half.h"

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

DType TensorStore::stored_dtype(const std::string& name) const {
  auto it = widened_.find(name);
  return it != widened_.end() ? it->second : at(name).dtype;
}

namespace {
// A float copy of the 16-bit tensor `view` (2-byte aligned, see aligned_bytes).
std::shared_ptr<float[]> widened(const TensorView& view) {
  const auto n = static_cast<size_t>(view.numel());
  std::shared_ptr<float[]> out(new float[n]);
  const auto* in = reinterpret_cast<const uint16_t*>(view.data);
  for (size_t i = 0; i < n; ++i) out[i] = view.dtype == DType::kF16 ? f16_to_f32(in[i]) : bf16_to_f32(in[i]);
  return out;
}
}  // namespace

void TensorStore::add(std::string name, TensorView view) {
  if (tensors_.count(name)) throw ModelError(source_.string() + ": duplicate tensor name '" + name + "'");
  if (view.dtype == DType::kF16 || view.dtype == DType::kBF16) {
    std::shared_ptr<float[]> wide = widened(view);
    widened_[name] = view.dtype;
    view.dtype = DType::kF32;
    view.data = reinterpret_cast<const std::byte*>(wide.get());
    keep_alive(std::move(wide));
  }
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
