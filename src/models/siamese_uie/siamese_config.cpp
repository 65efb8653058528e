#include "models/siamese_uie/siamese_config.h"

#include "common/json_input.h"
#include "io/regular_file.h"
#include "models/config_reader.h"

namespace rexnlu::models::siamese {

namespace {
// Sane ranges (as for the Rex family): far above any BERT-base checkpoint.
constexpr int kMaxVocabSize = 1'000'000;
constexpr int kMaxHiddenSize = 16'384;
constexpr int kMaxLayers = 256;
constexpr int kMaxIntermediateSize = 65'536;
constexpr int kMaxPositions = 65'536;
constexpr int kMaxTypes = 1'024;
}  // namespace

SiameseConfig parse_siamese_config(const std::string& json_text, const std::string& source_name) {
  nlohmann::json j;
  try {
    j = parse_json(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw ModelError(source_name + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw ModelError(source_name + ": not a JSON object");
  ConfigReader r(j, source_name, "SiameseUIE's BERT encoder");
  SiameseConfig c;
  c.model_type = r.string("model_type", std::nullopt);
  if (c.model_type != "bert")
    throw ModelError(source_name + ": model_type \"" + c.model_type +
                     "\" is not supported for SiameseUIE (model_type \"bert\")");
  c.vocab_size = r.integer("vocab_size", std::nullopt, 1, kMaxVocabSize);
  c.hidden_size = r.integer("hidden_size", std::nullopt, 1, kMaxHiddenSize);
  c.num_hidden_layers = r.integer("num_hidden_layers", std::nullopt, 1, kMaxLayers);
  c.num_attention_heads = r.integer("num_attention_heads", std::nullopt, 1, kMaxHiddenSize);
  c.intermediate_size = r.integer("intermediate_size", std::nullopt, 1, kMaxIntermediateSize);
  if (c.hidden_size % c.num_attention_heads != 0)
    throw ModelError(source_name + ": hidden_size " + std::to_string(c.hidden_size) +
                     " is not a multiple of num_attention_heads " + std::to_string(c.num_attention_heads));
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
  const double eps = r.number("layer_norm_eps", 1e-12);
  if (!(eps > 0 && eps < 1)) r.fail("layer_norm_eps", "must be a small positive number, found " + std::to_string(eps));
  c.layer_norm_eps = static_cast<float>(eps);
  return c;
}

SiameseConfig load_siamese_config(const std::filesystem::path& config_json) {
  return parse_siamese_config(io::read_regular_file(config_json, io::kMaxConfigBytes, "a model config"),
                              config_json.string());
}

}  // namespace rexnlu::models::siamese
