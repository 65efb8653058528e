#include "models/rex/rex_family.h"

#include "models/family_parts.h"
#include "models/rex/rex_config.h"
#include "models/rex/rex_uninlu_model.h"

namespace rexnlu::models::rex {

namespace {

bool recognizes(const nlohmann::json& config) { return model_type_is(config, "deberta-v2"); }

ModelInfo describe(const ModelConfig& c, const text::Tokenizer& tokenizer, const io::TensorStore& weights,
                   const RexUniNluModel& network) {
  ModelInfo i = describe_model(kFamily.name, c.model_type + " encoder + rotary token-pair link head (RexUniNLU)", c,
                               tokenizer, weights, network);
  i.position_buckets = c.position_buckets;
  i.added_tokens = static_cast<int64_t>(added_tokens().size());
  return i;
}

LoadedModel load(const std::filesystem::path& model_dir, const LoadOptions& options) {
  LoadedModel m{text::Tokenizer::from_model_dir(model_dir, added_tokens()), nullptr, {}, {}};
  const ModelConfig config = load_model_config(model_dir / "config.json");
  const io::TensorStore weights = io::load_checkpoint(model_dir);
  // The embedding table must have one row per token the tokenizer can produce.
  auto network = std::make_unique<RexUniNluModel>(config, weights, m.tokenizer.vocab_size(), options);
  add_load_warnings(m.warnings, weights, *network);
  m.info = describe(config, m.tokenizer, weights, *network);
  m.network = std::move(network);
  return m;
}

}  // namespace

const ModelFamily kFamily = {"rex-uninlu", "model_type \"deberta-v2\"", recognizes, added_tokens, load};

}  // namespace rexnlu::models::rex
