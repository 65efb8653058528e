#include "models/siamese_uie/siamese_config.h"

#include "io/regular_file.h"
#include "models/config_reader.h"

namespace rexnlu::models::siamese {

namespace {
constexpr int kMaxTypes = 1'024;
}  // namespace

SiameseConfig parse_siamese_config(const std::string& json_text, const std::string& source_name) {
  const json j = parse_config_object(json_text, source_name);
  ConfigReader r(j, source_name, "SiameseUIE's BERT encoder");
  SiameseConfig c;
  c.model_type = r.string("model_type", std::nullopt);
  if (c.model_type != "bert")
    throw ModelError(source_name + ": model_type \"" + c.model_type +
                     "\" is not supported for SiameseUIE (model_type \"bert\")");
  r.read_encoder_shape(c);
  if (c.num_hidden_layers <= kJointLayers)
    r.unsupported("num_hidden_layers", std::to_string(c.num_hidden_layers),
                  "above 6: the last 6 layers are the joint layers, the others the siamese lower layers");
  // Defaults below are transformers' BertConfig's.
  c.max_position_embeddings = r.integer("max_position_embeddings", 512, 1, kMaxPositions);
  c.type_vocab_size = r.integer("type_vocab_size", 2, 1, kMaxTypes);
  if (c.type_vocab_size < 2)
    r.unsupported("type_vocab_size", std::to_string(c.type_vocab_size), "at least 2: hints have token type 1");
  const std::string act = ConfigReader::normalized(r.string("hidden_act", "gelu"));
  if (act != "gelu") r.unsupported("hidden_act", "\"" + act + "\"", "\"gelu\"");
  const std::string pos = ConfigReader::normalized(r.string("position_embedding_type", "absolute"));
  if (pos != "absolute") r.unsupported("position_embedding_type", "\"" + pos + "\"", "\"absolute\"");
  c.layer_norm_eps = r.layer_norm_eps(1e-12);
  return c;
}

SiameseConfig load_siamese_config(const std::filesystem::path& config_json) {
  return parse_siamese_config(io::read_regular_file(config_json, io::kMaxConfigBytes, "a model config"),
                              config_json.string());
}

}  // namespace rexnlu::models::siamese
