// Data movement on a backend's device: gathering embedding rows, copying, masking rows.
#pragma once

#include "backends/backend.h"

namespace rexnlu::ops {

// out[t] = table[ids[t]]: table F32 [rows, width], ids I32 [T] (each in [0, rows), checked by the
// caller), out F32 [T, width] contiguous.
void embedding(backends::Backend& be, ConstTensorRef table, ConstTensorRef ids, TensorRef out);

// dst = src, both contiguous of the same size, each F32 or the backend's activation type (converted
// where they differ: rounded to nearest even to 16 bits, exact to F32).
void copy(backends::Backend& be, ConstTensorRef src, TensorRef dst);

// Rows r of x [rows, width] (contiguous; F32 or the backend's activation type) with keep[r] == 0
// become zeros; keep: U8 [rows].
void zero_rows(backends::Backend& be, TensorRef x, ConstTensorRef keep);

}  // namespace rexnlu::ops
