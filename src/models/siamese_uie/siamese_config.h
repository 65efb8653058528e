// config.json of a SiameseUIE checkpoint directory (ModelScope nlp_structbert_siamese-uie: a BERT
// config, model_type "bert"): the values the engine uses, checked for presence, type and range.
#pragma once

#include <filesystem>
#include <string>

namespace rexnlu::models::siamese {

// The original moves the LAST 6 encoder layers into the joint ("cross attention") stack
// (SiameseUieModel.set_crossattention_layer(6)); the layers below run on text and hint apart.
inline constexpr int kJointLayers = 6;

struct SiameseConfig {
  std::string model_type;           // "bert"
  int vocab_size = 0;               // rows of the word embedding table (21,128)
  int hidden_size = 0;              // 768
  int num_hidden_layers = 0;        // 12 in the file: 6 lower + 6 joint
  int num_attention_heads = 0;      // 12
  int intermediate_size = 0;        // 3072
  int max_position_embeddings = 0;  // 512: a window (384) and a hint (128) together
  int type_vocab_size = 0;          // 2: text 0, hint 1
  float layer_norm_eps = 1e-12f;

  int lower_layers() const { return num_hidden_layers - kJointLayers; }
  int head_dim() const { return hidden_size / num_attention_heads; }
};

// Parses and validates config.json; throws rexnlu::Error (kInvalidModel) naming the file and the
// missing or malformed key, or the unsupported value.
SiameseConfig load_siamese_config(const std::filesystem::path& config_json);
SiameseConfig parse_siamese_config(const std::string& json_text, const std::string& source_name);

}  // namespace rexnlu::models::siamese
