// Copying named float32 tensors out of a checkpoint, checking dtype and shape on the way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/tensor_store.h"

namespace rexnlu::models {

// The tensor `name` as float32 values; throws rexnlu::Error (kInvalidModel) naming the tensor
// and the checkpoint when it is absent, not F32, or not of `shape`.
std::vector<float> load_f32(const io::TensorStore& store, const std::string& name,
                            const std::vector<int64_t>& shape);

// Rows of dimension 0 of `name` (e.g. the embedding table, whose size follows the tokenizer).
int64_t tensor_rows(const io::TensorStore& store, const std::string& name);

// a followed by b (fusing weights of products that share their input).
std::vector<float> concat(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace rexnlu::models
