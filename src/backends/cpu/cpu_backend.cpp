#include "backends/cpu/cpu_backend.h"

#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "backends/cpu/gemm.h"
#include "backends/cpu/gemm_bf16.h"
#include "backends/cpu/gemm_int8.h"
#include "rexnlu/error.h"

namespace rexnlu::backends::cpu {

void check_precision(Precision precision) {
  const std::string name(precision_name(precision));
  switch (precision) {
    case Precision::kFloat32:
      return;
    case Precision::kInt8:
      if (!int8_available())
        throw InputError("precision int8: this build has no int8 gemm (it needs the oneDNN build, REXNLU_BLAS=dnnl)");
      return;
    case Precision::kBFloat16:
      if (!bf16_available())
        throw InputError("precision bf16: this build has no bf16 matmul (it needs the oneDNN build, REXNLU_BLAS=dnnl)");
      return;
    default:
      throw InputError("precision " + name + ": the CPU backend runs fp32, int8 and bf16 only (fp16 is not implemented)");
  }
}

CpuBackend::CpuBackend(int threads, Precision precision)
    : Backend(Device::kCpu, precision, Workspace::host_allocator()), threads_(threads) {}

std::string CpuBackend::describe() const {
  const int threads = threads_ > 0 ? threads_ : omp_get_max_threads();
  std::string s = "cpu, " + std::to_string(threads) + " threads, " + std::string(precision_name(precision())) + ", ";
  if (precision() == Precision::kInt8)
    return s + int8_kernel_name() + ", activations " + std::to_string(activation_levels()) +
           " levels per token; link head " + std::string(precision_name(precision_for(LinearRole::kLinkHead))) +
           ", attention and FFN outputs " + std::string(precision_name(precision_for(LinearRole::kFfnOutput)));
  if (precision() == Precision::kBFloat16) return s + bf16_kernel_name();
  return s + f32_linear_name();
}

Linear CpuBackend::make_linear(ConstTensorRef weight, ConstTensorRef bias) {
  return make_linear_at(precision(), weight, bias);
}

Linear CpuBackend::make_linear_as(LinearRole role, ConstTensorRef weight, ConstTensorRef bias) {
  return make_linear_at(precision_for(role), weight, bias);
}

Precision CpuBackend::precision_for(LinearRole role) const {
  if (precision() != Precision::kInt8 || role == LinearRole::kOther) return precision();
  if (dnnl_has_bf16_instructions()) return Precision::kBFloat16;
  return role == LinearRole::kLinkHead ? Precision::kFloat32 : precision();
}

Linear CpuBackend::make_linear_at(Precision precision, ConstTensorRef weight, ConstTensorRef bias) {
  const int64_t out = weight.shape[0], in = weight.cols();
  if (weight.dtype != DType::kF32 || !weight.contiguous())
    throw InternalError("CpuBackend::make_linear: " + rexnlu::describe(weight) + " is not a contiguous F32 matrix");
  if (precision != Precision::kInt8 && precision != Precision::kBFloat16) {
    // fp32: oneDNN's packed copy of W where its kernel here has a layout of its own (gemm.h), and then
    // only that one (Linear::weight without data: gemm.h's linear() unpacks W for the rare call that
    // needs it); else W as given. (Also the int8 link head's: not make_linear, which refuses int8.)
    auto packed = prepare_f32_weights(weight.f32(), static_cast<int>(out), static_cast<int>(in));
    if (!packed) return plain_linear(weight, bias);
    Linear l;
    l.weight = Linear::shape_only(weight, out);
    if (!bias.empty()) l.bias = copy_of(bias);
    l.prepared = std::move(packed);
    return l;
  }
  Linear l;
  if (!bias.empty()) l.bias = copy_of(bias);
  if (precision == Precision::kBFloat16) {  // bf16 [out, in], rounded once (gemm_bf16.h)
    l.weight = alloc_tensor(DType::kBF16, {out, in});
    auto* w = reinterpret_cast<uint16_t*>(l.weight.mutable_ref().data);
    to_bf16(weight.f32(), static_cast<size_t>(out * in), w);
    l.prepared = prepare_bf16_weights(w, static_cast<int>(out), static_cast<int>(in));
    return l;
  }
  l.weight = alloc_tensor(DType::kI8, {out, in});
  l.scale = alloc_tensor(DType::kF32, {out});
  l.scaled_sum = alloc_tensor(DType::kF32, {out});
  auto* q = reinterpret_cast<int8_t*>(l.weight.mutable_ref().data);
  quantize_weights_s8(weight.f32(), static_cast<int>(out), static_cast<int>(in), q, l.scale.mutable_ref().f32(),
                      l.scaled_sum.mutable_ref().f32());
  l.prepared = prepare_int8_weights(q, static_cast<int>(out), static_cast<int>(in));
  return l;
}

void CpuBackend::begin_pass() {
  Backend::begin_pass();
  if (threads_ > 0 && omp_get_max_threads() != threads_) omp_set_num_threads(threads_);
}

void CpuBackend::download(ConstTensorRef src, TensorRef host) {
  if (src.data == host.data) return;
  if (src.dtype != host.dtype || src.numel() != host.numel() || !src.contiguous() || !host.contiguous())
    throw InternalError("CpuBackend::download: " + rexnlu::describe(src) + " into " + rexnlu::describe(host));
  std::memcpy(host.data, src.data, static_cast<size_t>(src.numel()) * dtype_size(src.dtype));
}

std::shared_ptr<void> CpuBackend::allocate_persistent(size_t bytes) {
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (p == nullptr) throw std::bad_alloc();
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

void CpuBackend::copy_from_host(const void* host, void* device, size_t bytes) {
  if (bytes) std::memcpy(device, host, bytes);
}

}  // namespace rexnlu::backends::cpu
