// What every op checks before it dispatches: dtypes, devices and shapes of its arguments. A
// mismatch is a bug in the calling network code, reported as rexnlu::Error (kInternal) naming
// the op and the argument.
#pragma once

#include <string>

#include "backends/backend.h"
#include "tensor/tensor_ref.h"

namespace rexnlu::ops::detail {

[[noreturn]] void fail(const char* op, const std::string& what);
// The backend has no kernel for this op (e.g. a device added without it).
[[noreturn]] void no_kernel(const char* op, const backends::Backend& backend);

// `t` is a `dtype` matrix (rank 1 or 2, unit column stride, ld >= cols) on the backend's device.
void expect_matrix(const char* op, const char* name, ConstTensorRef t, DType dtype, const backends::Backend& backend);
// `t` is a contiguous `dtype` tensor of `numel` elements on the backend's device.
void expect_vector(const char* op, const char* name, ConstTensorRef t, DType dtype, int64_t numel,
                   const backends::Backend& backend);
// The dtype of activation `name`: F32, or the backend's activation_type() (F16 / BF16 on the GPU at
// fp16 / bf16); anything else fails naming the op and the argument.
DType activation_dtype(const char* op, const char* name, ConstTensorRef t, const backends::Backend& backend);
inline void expect(bool ok, const char* op, const char* what) {
  if (!ok) fail(op, what);
}

inline int to_int(int64_t v) { return static_cast<int>(v); }

}  // namespace rexnlu::ops::detail
