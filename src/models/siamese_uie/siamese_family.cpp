#include "models/siamese_uie/siamese_family.h"

#include "models/family_parts.h"
#include "models/siamese_uie/siamese_config.h"
#include "models/siamese_uie/siamese_uie_model.h"
#include "rexnlu/error.h"

namespace rexnlu::models::siamese {

namespace {

bool recognizes(const nlohmann::json& config) { return model_type_is(config, "bert"); }

const std::vector<std::string>& no_added_tokens() {
  static const std::vector<std::string> none;
  return none;
}

ModelInfo describe(const SiameseConfig& c, const text::Tokenizer& tokenizer, const io::TensorStore& weights,
                   const SiameseUieModel& network) {
  return describe_model(kFamily.name,
                        "bert encoder, " + std::to_string(c.lower_layers()) + " siamese + " +
                            std::to_string(kJointLayers) + " joint layers + start/end pointer head (SiameseUIE)",
                        c, tokenizer, weights, network);
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
  add_load_warnings(m.warnings, weights, *network);
  m.info = describe(config, m.tokenizer, weights, *network);
  m.pointer_network = std::move(network);
  return m;
}

}  // namespace

const ModelFamily kFamily = {"siamese-uie",
                             "model_type \"bert\" with head_clsf/tail_clsf/crossattention tensors",
                             recognizes, no_added_tokens, load};

}  // namespace rexnlu::models::siamese
