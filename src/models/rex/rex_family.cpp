#include "models/rex/rex_family.h"

#include <set>
#include <system_error>

#include "io/checkpoint.h"
#include "models/rex/rex_config.h"
#include "models/rex/rex_uninlu_model.h"

namespace rexnlu::models::rex {

namespace {

bool recognizes(const nlohmann::json& config) {
  const auto type = config.find("model_type");
  return type != config.end() && type->is_string() && type->get<std::string>() == "deberta-v2";
}

ModelInfo describe(const ModelConfig& c, const text::Tokenizer& tokenizer, const io::TensorStore& weights,
                   const RexUniNluModel& network) {
  ModelInfo i;
  i.family = kFamily.name;
  i.architecture = c.model_type + " encoder + rotary token-pair link head (RexUniNLU)";
  i.model_type = c.model_type;
  i.layers = c.num_hidden_layers;
  i.hidden_size = c.hidden_size;
  i.attention_heads = c.num_attention_heads;
  i.head_dim = c.head_dim();
  i.intermediate_size = c.intermediate_size;
  i.max_position_embeddings = c.max_position_embeddings;
  i.position_buckets = c.position_buckets;
  i.vocab_size = tokenizer.vocab_size();
  i.added_tokens = static_cast<int64_t>(added_tokens().size());
  i.config_vocab_size = c.vocab_size;
  const WeightLoader::Summary& s = network.weights_summary();
  i.parameters = s.parameters;
  i.parameter_bytes = s.bytes;
  for (const auto& d : s.dtypes) i.dtypes += (i.dtypes.empty() ? "" : ",") + d;
  i.checkpoint = weights.source().string();
  i.checkpoint_format = io::checkpoint_format(weights.source());
  i.checkpoint_tensors = static_cast<int64_t>(weights.size());
  i.backend = network.backend_description();
  return i;
}

LoadedModel load(const std::filesystem::path& model_dir, const LoadOptions& options) {
  LoadedModel m{text::Tokenizer::from_model_dir(model_dir, added_tokens()), nullptr, {}, {}};
  const ModelConfig config = load_model_config(model_dir / "config.json");
  const io::TensorStore weights = io::load_checkpoint(model_dir);
  // The embedding table must have one row per token the tokenizer can produce.
  auto network = std::make_unique<RexUniNluModel>(config, weights, m.tokenizer.vocab_size(), options);
  for (const std::string& name : network->unused_tensors())
    m.warnings.push_back(weights.source().string() + ": tensor '" + name + "' is not used");
  for (const std::string& w : network->weight_warnings()) m.warnings.push_back(w);
  m.info = describe(config, m.tokenizer, weights, *network);
  m.network = std::move(network);
  return m;
}

}  // namespace

const ModelFamily kFamily = {"rex-uninlu", "model_type \"deberta-v2\"", recognizes, added_tokens, load};

}  // namespace rexnlu::models::rex
