#include "models/siamese_uie/siamese_family.h"

#include "io/checkpoint.h"
#include "models/siamese_uie/siamese_config.h"
#include "models/siamese_uie/siamese_uie_model.h"
#include "rexnlu/error.h"

namespace rexnlu::models::siamese {

namespace {

bool recognizes(const nlohmann::json& config) {
  const auto type = config.find("model_type");
  return type != config.end() && type->is_string() && type->get<std::string>() == "bert";
}

const std::vector<std::string>& no_added_tokens() {
  static const std::vector<std::string> none;
  return none;
}

ModelInfo describe(const SiameseConfig& c, const text::Tokenizer& tokenizer, const io::TensorStore& weights,
                   const SiameseUieModel& network) {
  ModelInfo i;
  i.family = kFamily.name;
  i.architecture = "bert encoder, " + std::to_string(c.lower_layers()) + " siamese + " + std::to_string(kJointLayers) +
                   " joint layers + start/end pointer head (SiameseUIE)";
  i.model_type = c.model_type;
  i.layers = c.num_hidden_layers;
  i.hidden_size = c.hidden_size;
  i.attention_heads = c.num_attention_heads;
  i.head_dim = c.head_dim();
  i.intermediate_size = c.intermediate_size;
  i.max_position_embeddings = c.max_position_embeddings;
  i.vocab_size = tokenizer.vocab_size();
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
  const SiameseConfig config = load_siamese_config(model_dir / "config.json");
  LoadedModel m{text::Tokenizer::from_model_dir(model_dir, no_added_tokens()), nullptr, {}, {}, nullptr};
  if (m.tokenizer.vocab_size() > config.vocab_size)
    throw ModelError((model_dir / "config.json").string() + ": vocab_size " + std::to_string(config.vocab_size) +
                     " is smaller than the tokenizer's " + std::to_string(m.tokenizer.vocab_size()) + " tokens");
  const io::TensorStore weights = io::load_checkpoint(model_dir);
  // A BERT config alone could be any BERT model: the pointer head and the joint layers are what
  // make it SiameseUIE.
  if (!weights.find("head_clsf.weight") && !weights.find("crossattention.layer.0.output.dense.weight"))
    throw ModelError(weights.source().string() +
                     ": a BERT checkpoint without SiameseUIE's tensors (head_clsf.*, tail_clsf.*, crossattention.layer.*);"
                     " rexnlu runs BERT only as SiameseUIE (model families: rex-uninlu, siamese-uie)");
  auto network = std::make_unique<SiameseUieModel>(config, weights, options);
  for (const std::string& name : network->unused_tensors())
    m.warnings.push_back(weights.source().string() + ": tensor '" + name + "' is not used");
  for (const std::string& w : network->weight_warnings()) m.warnings.push_back(w);
  m.info = describe(config, m.tokenizer, weights, *network);
  m.pointer_network = std::move(network);
  return m;
}

}  // namespace

const ModelFamily kFamily = {"siamese-uie",
                             "model_type \"bert\" with head_clsf/tail_clsf/crossattention tensors",
                             recognizes, no_added_tokens, load};

}  // namespace rexnlu::models::siamese
