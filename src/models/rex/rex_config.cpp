#include "models/rex/rex_config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/json_input.h"
#include "io/regular_file.h"
#include "rexnlu/error.h"

namespace rexnlu::models::rex {

// Required keys: model_type, vocab_size, hidden_size, num_hidden_layers, num_attention_heads,
// intermediate_size. They fix the tensor shapes, and a config without them is more likely the
// wrong file than an intentionally minimal one. Every other key is optional and defaults to
// what transformers' DebertaV2Config (and the modeling code's getattr defaults) would use.
// Several of those defaults (relative_attention false, position_biased_input true,
// share_att_key false, no conv layer...) describe a stock DeBERTa-v2, which is then rejected
// as unsupported: HF would build a different network from such a config.

namespace {

using nlohmann::json;

// Sane ranges: far above any DeBERTa-v2 checkpoint (base: 12,800 / 768 / 12 / 3,072 / 512 / 256),
// low enough that a corrupt value is refused before anything is sized by it (docs/options.md).
constexpr int kMaxVocabSize = 1'000'000;
constexpr int kMaxHiddenSize = 16'384;
constexpr int kMaxLayers = 256;
constexpr int kMaxIntermediateSize = 65'536;
constexpr int kMaxPositions = 65'536;  // max_position_embeddings, position_buckets
constexpr int kMaxConvKernel = 255;
constexpr int kAnyInt = std::numeric_limits<int>::min();
constexpr int kIntMax = std::numeric_limits<int>::max();

class ConfigReader {
 public:
  ConfigReader(const json& j, std::string source) : j_(j), source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw ModelError(source_ + ": key '" + key + "' " + what);
  }
  [[noreturn]] void unsupported(const std::string& key, const std::string& found, const std::string& needed) const {
    throw ModelError(source_ + ": " + key + " = " + found + " is not supported: rexnlu supports only the RexUniNLU variant " +
                     "of DeBERTa-v2 (" + key + " " + needed + ")");
  }

  const json* find(const std::string& key) const {
    auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }

  // An integer in [lo, hi]; messages quote the value as written in the file.
  int integer(const std::string& key, std::optional<int> fallback, int lo, int hi) const {
    const json* v = find(key);
    std::string kind = lo == 1 ? "a positive integer" : lo == kAnyInt ? "an integer" : "an integer from " + std::to_string(lo);
    if (hi != kIntMax) kind += (lo == 1 || lo == kAnyInt ? " of at most " : " to ") + std::to_string(hi);
    if (!v) {
      if (!fallback) fail(key, "is missing (it must be " + kind + ")");
      return *fallback;
    }
    if (!v->is_number_integer()) fail(key, "must be " + kind + ", found " + v->dump());
    const int64_t x = v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)
                          ? INT64_MAX
                          : v->get<int64_t>();
    if (x < lo || x > hi) fail(key, "must be " + kind + ", found " + v->dump());
    return static_cast<int>(x);
  }

  bool boolean(const std::string& key, bool fallback) const {
    const json* v = find(key);
    if (!v) return fallback;
    if (!v->is_boolean()) fail(key, "must be true or false, found " + v->dump());
    return v->get<bool>();
  }

  std::string string(const std::string& key, std::optional<std::string> fallback) const {
    const json* v = find(key);
    if (!v) {
      if (!fallback) fail(key, "is missing (it must be a string)");
      return *fallback;
    }
    if (!v->is_string()) fail(key, "must be a string, found " + v->dump());
    return v->get<std::string>();
  }

  double number(const std::string& key, double fallback) const {
    const json* v = find(key);
    if (!v) return fallback;
    if (!v->is_number()) fail(key, "must be a number, found " + v->dump());
    return v->get<double>();
  }

  // "c2p|p2c" or ["c2p", "p2c"] -> {"c2p", "p2c"}, lower-cased and trimmed like HF does.
  std::vector<std::string> string_list(const std::string& key) const {
    const json* v = find(key);
    std::vector<std::string> parts;
    if (!v) return parts;
    if (v->is_string()) {
      std::stringstream ss(v->get<std::string>());
      for (std::string part; std::getline(ss, part, '|');) parts.push_back(part);
    } else if (v->is_array()) {
      for (const auto& item : *v) {
        if (!item.is_string()) fail(key, "must be a string like \"c2p|p2c\" or a list of strings, found " + v->dump());
        parts.push_back(item.get<std::string>());
      }
    } else {
      fail(key, "must be a string like \"c2p|p2c\" or a list of strings, found " + v->dump());
    }
    for (auto& p : parts) p = normalized(p);
    return parts;
  }

  static std::string normalized(std::string s) {
    auto not_space = [](unsigned char c) { return !std::isspace(c); };
    s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
    s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }

 private:
  const json& j_;
  std::string source_;
};

std::string joined(const std::vector<std::string>& parts) {
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : "|") + p;
  return "\"" + s + "\"";
}

}  // namespace

ModelConfig parse_model_config(const std::string& json_text, const std::string& source_name) {
  json j;
  try {
    j = parse_json(json_text);
  } catch (const json::exception& e) {
    throw ModelError(source_name + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw ModelError(source_name + ": not a JSON object");
  ConfigReader r(j, source_name);
  ModelConfig c;

  c.model_type = r.string("model_type", std::nullopt);
  if (c.model_type != "deberta-v2")
    throw ModelError(source_name + ": model_type \"" + c.model_type +
                     "\" is not supported: rexnlu supports only the RexUniNLU variant of DeBERTa-v2 (model_type \"deberta-v2\")");
  c.vocab_size = r.integer("vocab_size", std::nullopt, 1, kMaxVocabSize);
  c.hidden_size = r.integer("hidden_size", std::nullopt, 1, kMaxHiddenSize);
  c.num_hidden_layers = r.integer("num_hidden_layers", std::nullopt, 1, kMaxLayers);
  c.num_attention_heads = r.integer("num_attention_heads", std::nullopt, 1, kMaxHiddenSize);
  c.intermediate_size = r.integer("intermediate_size", std::nullopt, 1, kMaxIntermediateSize);
  if (c.hidden_size % c.num_attention_heads != 0)
    throw ModelError(source_name + ": hidden_size " + std::to_string(c.hidden_size) +
                     " is not a multiple of num_attention_heads " + std::to_string(c.num_attention_heads));

  // Defaults below are DebertaV2Config's / the HF modeling code's.
  c.max_position_embeddings = r.integer("max_position_embeddings", 512, 1, kMaxPositions);
  c.position_buckets = r.integer("position_buckets", -1, kAnyInt, kMaxPositions);
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
  const double eps = r.number("layer_norm_eps", 1e-7);
  if (!(eps > 0 && eps < 1)) r.fail("layer_norm_eps", "must be a small positive number, found " + std::to_string(eps));
  c.layer_norm_eps = static_cast<float>(eps);

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
