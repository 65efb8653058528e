#include "models/weight_loading.h"

#include "rexnlu/error.h"

namespace rexnlu::models {

namespace {
std::string describe(const io::TensorStore& store, const std::string& name) {
  return "tensor '" + name + "' in " + store.source().string();
}
}  // namespace

std::vector<float> load_f32(const io::TensorStore& store, const std::string& name,
                            const std::vector<int64_t>& shape) {
  const TensorView& t = store.at(name);
  if (t.dtype != DType::kF32)
    throw ModelError(describe(store, name) + " has dtype " + std::string(dtype_name(t.dtype)) +
                     ", expected F32");
  if (t.shape != shape)
    throw ModelError(describe(store, name) + " has shape " + shape_string(t.shape) + ", expected " +
                     shape_string(shape));
  return std::vector<float>(t.f32(), t.f32() + t.numel());
}

int64_t tensor_rows(const io::TensorStore& store, const std::string& name) {
  const TensorView& t = store.at(name);
  if (t.shape.empty()) throw ModelError(describe(store, name) + " is a scalar, expected a matrix");
  return t.shape[0];
}

std::vector<float> concat(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> out(a);
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

}  // namespace rexnlu::models
