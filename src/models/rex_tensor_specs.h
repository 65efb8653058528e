// The tensors a RexUniNLU checkpoint must hold (spec section 2), with shapes derived from the
// config: 3 embedding tensors + 16 per layer + 12 encoder-level and head tensors
// (207 for the real 12-layer model).
#pragma once

#include <cstdint>
#include <vector>

#include "io/checkpoint.h"
#include "io/model_config.h"

namespace rexnlu::models {

// `embedding_rows`: the tokenizer's vocabulary size (vocab.txt entries + 4 added tokens),
// which the word embedding table must match.
std::vector<io::TensorSpec> rex_tensor_specs(const io::ModelConfig& config, int64_t embedding_rows);

}  // namespace rexnlu::models
