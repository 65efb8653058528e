#include "ops/check.h"

#include "rexnlu/error.h"

namespace rexnlu::ops::detail {

void fail(const char* op, const std::string& what) { throw InternalError(std::string(op) + ": " + what); }

void no_kernel(const char* op, const backends::Backend& backend) {
  fail(op, "no kernel for device " + std::string(device_name(backend.device())));
}

void expect_matrix(const char* op, const char* name, ConstTensorRef t, DType dtype, const backends::Backend& backend) {
  if (t.empty() || t.dtype != dtype || t.device != backend.device() || t.rank < 1 || t.rank > 2 ||
      t.strides[t.rank - 1] != 1 || t.ld() < t.cols())
    fail(op, std::string(name) + " is " + describe(t) + ", expected a " + std::string(dtype_name(dtype)) +
                 " matrix on " + std::string(device_name(backend.device())));
}

void expect_vector(const char* op, const char* name, ConstTensorRef t, DType dtype, int64_t numel,
                   const backends::Backend& backend) {
  if (t.empty() || t.dtype != dtype || t.device != backend.device() || !t.contiguous() || t.numel() != numel)
    fail(op, std::string(name) + " is " + describe(t) + ", expected " + std::to_string(numel) + " contiguous " +
                 std::string(dtype_name(dtype)) + " on " + std::string(device_name(backend.device())));
}

DType activation_dtype(const char* op, const char* name, ConstTensorRef t, const backends::Backend& backend) {
  const DType act = backend.activation_type();
  if (t.dtype != DType::kF32 && t.dtype != act)
    fail(op, std::string(name) + " is " + describe(t) + ", expected F32" +
                 (act == DType::kF32 ? std::string() : " or " + std::string(dtype_name(act))) + " activations");
  return t.dtype;
}

}  // namespace rexnlu::ops::detail
