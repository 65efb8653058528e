// Data movement on a backend's device: gathering embedding rows, copying, masking rows, bits to bytes.
#pragma once

#include <cstdint>

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

// Bytes that are only ever tested against zero (attention masks) cross to a device as bits, 1/8 of
// their size to stage and copy (docs/benchmarks.md "Session 23"):
// pack_bits, on the host: bit i % 32 of words[i / 32] = (src[i] != 0) for i < n, the last word's
// bits past n zero; words holds (n + 31) / 32 entries.
void pack_bits(const uint8_t* src, int64_t n, uint32_t* words);
// unpack_bits, on be's device: dst[i] = 1 where bit i % 32 of words[i / 32] is set, else 0.
// words: I32 [(n + 31) / 32] (the bit patterns), dst: U8 [n] contiguous.
void unpack_bits(backends::Backend& be, ConstTensorRef words, TensorRef dst);

}  // namespace rexnlu::ops
