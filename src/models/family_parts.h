// What every model family's load (rex/rex_family.cpp, siamese_uie/siamese_family.cpp) does the
// same way: recognise config.json by its model_type, describe the encoder, the loaded weights and
// the checkpoint in ModelInfo, and report the checkpoint's unused tensors as load warnings.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/checkpoint.h"
#include "io/tensor_store.h"
#include "models/family.h"

namespace rexnlu::models {

// config.json's model_type is the string `type`.
inline bool model_type_is(const nlohmann::json& config, const std::string& type) {
  const auto it = config.find("model_type");
  return it != config.end() && it->is_string() && it->get<std::string>() == type;
}

// A family's Config has the encoder shape (vocab_size, hidden_size, num_hidden_layers,
// num_attention_heads, intermediate_size, max_position_embeddings, head_dim()); a Network has
// weights_summary(), backend_description(), unused_tensors() and weight_warnings().
template <class Config, class Network>
ModelInfo describe_model(const char* family, std::string architecture, const Config& c,
                         const text::Tokenizer& tokenizer, const io::TensorStore& weights, const Network& network) {
  ModelInfo i;
  i.family = family;
  i.architecture = std::move(architecture);
  i.model_type = c.model_type;
  i.layers = c.num_hidden_layers;
  i.hidden_size = c.hidden_size;
  i.attention_heads = c.num_attention_heads;
  i.head_dim = c.head_dim();
  i.intermediate_size = c.intermediate_size;
  i.max_position_embeddings = c.max_position_embeddings;
  i.vocab_size = tokenizer.vocab_size();
  i.config_vocab_size = c.vocab_size;
  const auto& s = network.weights_summary();
  i.parameters = s.parameters;
  i.parameter_bytes = s.bytes;
  for (const auto& d : s.dtypes) i.dtypes += (i.dtypes.empty() ? "" : ",") + d;
  i.checkpoint = weights.source().string();
  i.checkpoint_format = io::checkpoint_format(weights.source());
  i.checkpoint_tensors = static_cast<int64_t>(weights.size());
  i.backend = network.backend_description();
  return i;
}

// The checkpoint's tensors the network did not declare, then the network's own weight warnings.
template <class Network>
void add_load_warnings(std::vector<std::string>& warnings, const io::TensorStore& weights, const Network& network) {
  for (const std::string& name : network.unused_tensors())
    warnings.push_back(weights.source().string() + ": tensor '" + name + "' is not used");
  for (const std::string& w : network.weight_warnings()) warnings.push_back(w);
}

}  // namespace rexnlu::models
