#include "models/weight_loader.h"

#include <algorithm>

namespace rexnlu::models {

const TensorView* WeightLoader::checked(const std::string& name, const std::vector<int64_t>& shape,
                                        const std::string& rows_meaning) {
  declared_.push_back(io::TensorSpec{name, DType::kF32, shape, rows_meaning});
  if (!io::check_tensor(store_, declared_.back(), missing_, wrong_)) return nullptr;
  const TensorView& v = store_.at(name);
  summary_.tensors += 1;
  summary_.parameters += v.numel();
  const DType stored = store_.stored_dtype(name);  // F16 for a 16-bit checkpoint, widened at load
  summary_.bytes += v.numel() * static_cast<int64_t>(dtype_size(stored));
  summary_.dtypes.insert(std::string(dtype_name(stored)));
  return &v;
}

namespace {
ConstTensorRef host_view(const TensorView& v) {
  ConstTensorRef r(v.data, v.dtype, {});
  r.rank = static_cast<int>(v.shape.size());
  int64_t stride = 1;
  for (int k = r.rank - 1; k >= 0; --k) {
    r.shape[k] = v.shape[k];
    r.strides[k] = stride;
    stride *= v.shape[k];
  }
  return r;
}
}  // namespace

Tensor WeightLoader::tensor(const std::string& name, const std::vector<int64_t>& shape, const std::string& rows_meaning) {
  const TensorView* v = checked(name, shape, rows_meaning);
  return v ? backend_.copy_of(host_view(*v)) : Tensor();
}

const float* WeightLoader::host_f32(const std::string& name, const std::vector<int64_t>& shape,
                                   const std::string& rows_meaning) {
  const TensorView* v = checked(name, shape, rows_meaning);
  return v ? v->f32() : nullptr;
}

Linear WeightLoader::linear(const std::vector<std::string>& prefixes, int64_t out_each, int64_t in,
                            LinearRole role) {
  std::vector<const TensorView*> weights, biases;
  for (const std::string& p : prefixes) {
    weights.push_back(checked(p + ".weight", {out_each, in}, {}));
    biases.push_back(checked(p + ".bias", {out_each}, {}));
  }
  const auto found = [](const TensorView* t) { return t != nullptr; };
  if (!std::all_of(weights.begin(), weights.end(), found) || !std::all_of(biases.begin(), biases.end(), found))
    return Linear{};
  if (prefixes.size() == 1) return backend_.make_linear_as(role, host_view(*weights[0]), host_view(*biases[0]));
  std::vector<float> w, b;  // fused on the host, then laid out by the backend
  for (size_t i = 0; i < prefixes.size(); ++i) {
    w.insert(w.end(), weights[i]->f32(), weights[i]->f32() + weights[i]->numel());
    b.insert(b.end(), biases[i]->f32(), biases[i]->f32() + biases[i]->numel());
  }
  const auto out = static_cast<int64_t>(prefixes.size()) * out_each;
  return backend_.make_linear_as(role, host_ref(w.data(), {out, in}), host_ref(b.data(), {out}));
}

LayerNormWeights WeightLoader::layer_norm(const std::string& prefix, int64_t width, float eps) {
  Tensor gamma = tensor(prefix + ".weight", {width});
  Tensor beta = tensor(prefix + ".bias", {width});
  return LayerNormWeights{std::move(gamma), std::move(beta), eps};
}

ops::Conv1dK3Weights WeightLoader::conv1d_k3(const std::string& prefix, int64_t out, int64_t in) {
  const TensorView* w = checked(prefix + ".weight", {out, in, 3}, {});  // torch Conv1d: [out, in, k]
  Tensor bias = tensor(prefix + ".bias", {out});
  if (!w) return {};
  const std::vector<float> taps = ops::conv1d_k3_taps(w->f32(), out, in);
  // The taps multiply the activations: stored in their type (16-bit on the GPU at fp16 / bf16).
  return ops::Conv1dK3Weights{backend_.copy_as(host_ref(taps.data(), {3, out, in}), backend_.activation_type()),
                              std::move(bias)};
}

std::vector<std::string> WeightLoader::finish() const {
  io::throw_tensor_problems(store_, missing_, wrong_);
  std::vector<std::string> unused = io::unused_tensors(store_, declared_);
  std::erase_if(unused, [this](const std::string& name) { return known_unused_.count(name) > 0; });
  return unused;
}

}  // namespace rexnlu::models
