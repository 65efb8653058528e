// config.json of a RexUniNLU (DeBERTa-v2) checkpoint directory: the values the engine uses,
// checked for presence, type and consistency (spec section 1.2).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace rexnlu::models::rex {

struct ModelConfig {
  std::string model_type;           // "deberta-v2"
  int vocab_size = 0;               // rows of the original vocab (12,800); embeddings may have more
  int hidden_size = 0;              // 768
  int num_hidden_layers = 0;        // 12
  int num_attention_heads = 0;      // 12
  int intermediate_size = 0;        // 3072
  int max_position_embeddings = 0;  // 512
  int position_buckets = 0;         // 256 -> relative embedding table of 2*256 rows
  int max_relative_positions = -1;  // -1: no log bucketing (spec section 3)
  bool relative_attention = true;
  bool share_att_key = true;
  bool position_biased_input = false;
  int type_vocab_size = 0;
  std::vector<std::string> pos_att_type;  // {"c2p", "p2c"}
  std::string norm_rel_ebd;               // "layer_norm"
  int conv_kernel_size = 0;               // 3
  std::string conv_act;                   // "gelu"
  std::string hidden_act;                 // "gelu"
  float layer_norm_eps = 1e-7f;

  int head_dim() const { return hidden_size / num_attention_heads; }
};

// Parses and validates config.json; throws rexnlu::Error (kInvalidModel) naming the file and
// the missing or malformed key, or the unsupported value.
ModelConfig load_model_config(const std::filesystem::path& config_json);
ModelConfig parse_model_config(const std::string& json_text, const std::string& source_name);

}  // namespace rexnlu::models::rex
