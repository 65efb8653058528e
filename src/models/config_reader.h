// Reading a model family's config.json: typed keys with ranges and defaults, errors that name the
// file, the key and the value as written (rex/rex_config.cpp, siamese_uie/siamese_config.cpp).
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/json_input.h"
#include "rexnlu/error.h"

namespace rexnlu::models {

using nlohmann::json;

inline constexpr int kAnyInt = std::numeric_limits<int>::min();
inline constexpr int kIntMax = std::numeric_limits<int>::max();

// Sane ranges for every family: far above any base checkpoint (DeBERTa-v2 base: 12,800 / 768 / 12 /
// 3,072 / 512; BERT base: 21,128 / 768 / 12 / 3,072 / 512), low enough that a corrupt value is
// refused before anything is sized by it (docs/options.md).
inline constexpr int kMaxVocabSize = 1'000'000;
inline constexpr int kMaxHiddenSize = 16'384;
inline constexpr int kMaxLayers = 256;
inline constexpr int kMaxIntermediateSize = 65'536;
inline constexpr int kMaxPositions = 65'536;  // max_position_embeddings, position_buckets

// config.json's text as a JSON object; ModelError naming `source_name` otherwise.
inline json parse_config_object(const std::string& json_text, const std::string& source_name) {
  json j;
  try {
    j = parse_json(json_text);
  } catch (const json::exception& e) {
    throw ModelError(source_name + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw ModelError(source_name + ": not a JSON object");
  return j;
}

class ConfigReader {
 public:
  // `supported` names what the family runs, for errors: "the RexUniNLU variant of DeBERTa-v2".
  ConfigReader(const json& j, std::string source, std::string supported)
      : j_(j), source_(std::move(source)), supported_(std::move(supported)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw ModelError(source_ + ": key '" + key + "' " + what);
  }
  [[noreturn]] void unsupported(const std::string& key, const std::string& found, const std::string& needed) const {
    throw ModelError(source_ + ": " + key + " = " + found + " is not supported: rexnlu supports only " + supported_ +
                     " (" + key + " " + needed + ")");
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

  // The keys that fix every family's tensor shapes, all required (a config without them is more
  // likely the wrong file than an intentionally minimal one): vocab_size, hidden_size,
  // num_hidden_layers, num_attention_heads, intermediate_size; hidden_size must split evenly
  // into the heads.
  template <class Config>
  void read_encoder_shape(Config& c) const {
    c.vocab_size = integer("vocab_size", std::nullopt, 1, kMaxVocabSize);
    c.hidden_size = integer("hidden_size", std::nullopt, 1, kMaxHiddenSize);
    c.num_hidden_layers = integer("num_hidden_layers", std::nullopt, 1, kMaxLayers);
    c.num_attention_heads = integer("num_attention_heads", std::nullopt, 1, kMaxHiddenSize);
    c.intermediate_size = integer("intermediate_size", std::nullopt, 1, kMaxIntermediateSize);
    if (c.hidden_size % c.num_attention_heads != 0)
      throw ModelError(source_ + ": hidden_size " + std::to_string(c.hidden_size) +
                       " is not a multiple of num_attention_heads " + std::to_string(c.num_attention_heads));
  }

  // layer_norm_eps: a small positive number (`fallback` is the family's transformers default).
  float layer_norm_eps(double fallback) const {
    const double eps = number("layer_norm_eps", fallback);
    if (!(eps > 0 && eps < 1)) fail("layer_norm_eps", "must be a small positive number, found " + std::to_string(eps));
    return static_cast<float>(eps);
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
  std::string supported_;
};

}  // namespace rexnlu::models
