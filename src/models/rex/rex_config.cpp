#include "models/rex/rex_config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/json_input.h"
#include "io/regular_file.h"
#include "models/config_reader.h"
#include "rexnlu/error.h"

namespace rexnlu::models::rex {

// Required keys: model_type and the encoder's shape (ConfigReader::read_encoder_shape). Every
// other key is optional and defaults to what transformers' DebertaV2Config (and the modeling code's getattr defaults) would use.
// Several of those defaults (relative_attention false, position_biased_input true,
// share_att_key false, no conv layer...) describe a stock DeBERTa-v2, which is then rejected
// as unsupported: HF would build a different network from such a config.

namespace {

using nlohmann::json;
using models::ConfigReader;
using models::kAnyInt;
using models::kIntMax;

constexpr int kMaxConvKernel = 255;
std::string joined(const std::vector<std::string>& parts) {
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : "|") + p;
  return "\"" + s + "\"";
}

}  // namespace

ModelConfig parse_model_config(const std::string& json_text, const std::string& source_name) {
  const json j = models::parse_config_object(json_text, source_name);
  ConfigReader r(j, source_name, "the RexUniNLU variant of DeBERTa-v2");
  ModelConfig c;

  c.model_type = r.string("model_type", std::nullopt);
  if (c.model_type != "deberta-v2")
    throw ModelError(source_name + ": model_type \"" + c.model_type +
                     "\" is not supported: rexnlu supports only the RexUniNLU variant of DeBERTa-v2 (model_type \"deberta-v2\")");
  r.read_encoder_shape(c);

  // Defaults below are DebertaV2Config's / the HF modeling code's.
  c.max_position_embeddings = r.integer("max_position_embeddings", 512, 1, models::kMaxPositions);
  c.position_buckets = r.integer("position_buckets", -1, kAnyInt, models::kMaxPositions);
  c.max_relative_positions = r.integer("max_relative_positions", -1, kAnyInt, kIntMax);
  c.relative_attention = r.boolean("relative_attention", false);
  c.share_att_key = r.boolean("share_att_key", false);
  c.position_biased_input = r.boolean("position_biased_input", true);
  c.type_vocab_size = r.integer("type_vocab_size", 0, kAnyInt, kIntMax);
  c.pos_att_type = r.string_list("pos_att_type");
  c.norm_rel_ebd = ConfigReader::normalized(r.string("norm_rel_ebd", "none"));
  c.conv_kernel_size = r.integer("conv_kernel_size", 0, kAnyInt, kMaxConvKernel);
  c.conv_act = ConfigReader::normalized(r.string("conv_act", "tanh"));
  c.hidden_act = ConfigReader::normalized(r.string("hidden_act", "gelu"));
  c.layer_norm_eps = r.layer_norm_eps(1e-7);

  // The RexUniNLU variant (spec section 3); everything else would need other network code.
  if (!c.relative_attention) r.unsupported("relative_attention", "false", "true");
  if (c.position_biased_input) r.unsupported("position_biased_input", "true", "false");
  if (c.type_vocab_size != 0) r.unsupported("type_vocab_size", std::to_string(c.type_vocab_size), "0");
  if (!c.share_att_key) r.unsupported("share_att_key", "false", "true");
  std::vector<std::string> att = c.pos_att_type;
  std::sort(att.begin(), att.end());
  if (att != std::vector<std::string>{"c2p", "p2c"}) r.unsupported("pos_att_type", joined(c.pos_att_type), "\"c2p|p2c\"");
  c.pos_att_type = {"c2p", "p2c"};
  if (c.position_buckets <= 0)
    r.unsupported("position_buckets", std::to_string(c.position_buckets), "a positive number of buckets, 256");
  if (c.max_relative_positions > 0)
    r.unsupported("max_relative_positions", std::to_string(c.max_relative_positions),
                  "-1: no log-bucketing of relative positions");
  if (c.hidden_act != "gelu") r.unsupported("hidden_act", "\"" + c.hidden_act + "\"", "\"gelu\"");
  if (c.norm_rel_ebd != "layer_norm") r.unsupported("norm_rel_ebd", "\"" + c.norm_rel_ebd + "\"", "\"layer_norm\"");
  if (c.conv_kernel_size <= 0 || c.conv_kernel_size % 2 == 0)
    r.unsupported("conv_kernel_size", std::to_string(c.conv_kernel_size), "an odd positive kernel size, 3");
  if (c.conv_act != "gelu") r.unsupported("conv_act", "\"" + c.conv_act + "\"", "\"gelu\"");
  if (r.find("embedding_size") && r.integer("embedding_size", 0, 1, kIntMax) != c.hidden_size)
    r.unsupported("embedding_size", std::to_string(r.integer("embedding_size", 0, 1, kIntMax)), "equal to hidden_size");
  if (r.find("conv_groups") && r.integer("conv_groups", 1, 1, kIntMax) != 1)
    r.unsupported("conv_groups", std::to_string(r.integer("conv_groups", 1, 1, kIntMax)), "1");
  if (r.find("attention_head_size") && r.integer("attention_head_size", 0, 1, kIntMax) != c.head_dim())
    r.unsupported("attention_head_size", std::to_string(r.integer("attention_head_size", 0, 1, kIntMax)),
                  "hidden_size / num_attention_heads");
  return c;
}

ModelConfig load_model_config(const std::filesystem::path& config_json) {
  return parse_model_config(io::read_regular_file(config_json, io::kMaxConfigBytes, "a model config"), config_json.string());
}

}  // namespace rexnlu::models::rex
