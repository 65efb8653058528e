#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "models/rex/rex_config.h"
#include "io/io_test_util.h"

namespace rexnlu::models::rex {
namespace {

using io::expect_error;
using io::expect_model_error;
using io::read_bytes;
using io::tiny_model_dir;

using nlohmann::json;

json tiny_config_json() {
  const auto bytes = read_bytes(tiny_model_dir() / "config.json");
  return json::parse(bytes.begin(), bytes.end());
}

ModelConfig parse(const json& j) { return parse_model_config(j.dump(), "config.json"); }

TEST(ModelConfig, ParsesTinyConfig) {
  const ModelConfig c = load_model_config(tiny_model_dir() / "config.json");
  EXPECT_EQ(c.model_type, "deberta-v2");
  EXPECT_EQ(c.vocab_size, 12800);
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.num_hidden_layers, 2);
  EXPECT_EQ(c.num_attention_heads, 4);
  EXPECT_EQ(c.head_dim(), 16);
  EXPECT_EQ(c.intermediate_size, 128);
  EXPECT_EQ(c.max_position_embeddings, 512);
  EXPECT_EQ(c.position_buckets, 256);
  EXPECT_EQ(c.max_relative_positions, -1);
  EXPECT_TRUE(c.relative_attention);
  EXPECT_TRUE(c.share_att_key);
  EXPECT_FALSE(c.position_biased_input);
  EXPECT_EQ(c.type_vocab_size, 0);
  EXPECT_EQ(c.pos_att_type, (std::vector<std::string>{"c2p", "p2c"}));
  EXPECT_EQ(c.norm_rel_ebd, "layer_norm");
  EXPECT_EQ(c.conv_kernel_size, 3);
  EXPECT_EQ(c.conv_act, "gelu");
  EXPECT_EQ(c.hidden_act, "gelu");
  EXPECT_FLOAT_EQ(c.layer_norm_eps, 1e-7f);
}

// A value nested 100,000 deep crashed the loader (stack overflow quoting it in the error message).
TEST(ModelConfig, DeeplyNestedValueIsRefusedNotACrash) {
  std::string text = tiny_config_json().dump();
  const std::string deep = std::string(100000, '[') + "1" + std::string(100000, ']');
  text.insert(1, "\"vocab_size_x\": " + deep + ", ");
  expect_model_error([&] { parse_model_config(text, "config.json"); },
                     {"config.json", "nested deeper than the limit of 64"});
  text = tiny_config_json().dump();
  text.insert(1, "\"num_hidden_layers\": " + deep + ", ");
  expect_model_error([&] { parse_model_config(text, "config.json"); }, {"config.json", "nested deeper"});
}

// Every size is bounded before anything is sized by it, and the message quotes the value given.
TEST(ModelConfig, ValuesOutsideSaneRangesAreRefused) {
  const std::pair<const char*, const char*> cases[] = {
      {"num_hidden_layers", "a positive integer of at most 256"},
      {"vocab_size", "a positive integer of at most 1000000"},
      {"hidden_size", "a positive integer of at most 16384"},
      {"num_attention_heads", "a positive integer of at most 16384"},
      {"intermediate_size", "a positive integer of at most 65536"},
      {"max_position_embeddings", "a positive integer of at most 65536"},
      {"position_buckets", "an integer of at most 65536"},
      {"conv_kernel_size", "an integer of at most 255"}};
  for (const auto& [key, range] : cases) {
    SCOPED_TRACE(key);
    json j = tiny_config_json();
    j[key] = 1000000000;
    expect_model_error([&] { parse(j); }, {key, range, "found 1000000000"});
  }
  json j = tiny_config_json();
  j["num_hidden_layers"] = 18446744073709551615u;  // not clamped in the message
  expect_model_error([&] { parse(j); }, {"num_hidden_layers", "found 18446744073709551615"});
  j["num_hidden_layers"] = 0;
  expect_model_error([&] { parse(j); }, {"num_hidden_layers", "found 0"});
}

TEST(ModelConfig, PosAttTypeMayBeAList) {
  json j = tiny_config_json();
  j["pos_att_type"] = {"p2c", "c2p"};
  EXPECT_EQ(parse(j).pos_att_type, (std::vector<std::string>{"c2p", "p2c"}));
}

TEST(ModelConfig, AbsentOptionalKeysTakeHfDefaults) {
  json j = tiny_config_json();
  j.erase("layer_norm_eps");
  j.erase("max_position_embeddings");
  j.erase("max_relative_positions");
  j.erase("hidden_act");
  const ModelConfig c = parse(j);
  EXPECT_FLOAT_EQ(c.layer_norm_eps, 1e-7f);
  EXPECT_EQ(c.max_position_embeddings, 512);
  EXPECT_EQ(c.max_relative_positions, -1);
  EXPECT_EQ(c.hidden_act, "gelu");
}

TEST(ModelConfig, MissingRequiredKeyIsNamed) {
  for (const char* key : {"hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size",
                          "model_type"}) {
    SCOPED_TRACE(key);
    json j = tiny_config_json();
    j.erase(key);
    expect_model_error([&] { parse(j); }, {"config.json", std::string("key '") + key + "'", "missing"});
  }
}

TEST(ModelConfig, MalformedKeyIsNamed) {
  const std::vector<std::pair<std::string, json>> cases = {
      {"hidden_size", "64"}, {"hidden_size", -64}, {"hidden_size", 64.5}, {"hidden_size", 0},
      {"num_attention_heads", json::array()}, {"num_hidden_layers", 1e12}, {"vocab_size", true}};
  for (const auto& [key, value] : cases) {
    SCOPED_TRACE(key + " = " + value.dump());
    json j = tiny_config_json();
    j[key] = value;
    expect_model_error([&] { parse(j); }, {"config.json: key '" + key + "' must be a positive integer"});
  }
  json j = tiny_config_json();
  j["relative_attention"] = "yes";
  expect_model_error([&] { parse(j); }, {"key 'relative_attention' must be true or false"});
  j = tiny_config_json();
  j["pos_att_type"] = 3;
  expect_model_error([&] { parse(j); }, {"key 'pos_att_type'"});
  j = tiny_config_json();
  j["layer_norm_eps"] = "1e-7";
  expect_model_error([&] { parse(j); }, {"key 'layer_norm_eps' must be a number"});
}

TEST(ModelConfig, HiddenSizeMustBeAMultipleOfHeads) {
  json j = tiny_config_json();
  j["num_attention_heads"] = 5;
  expect_model_error([&] { parse(j); }, {"hidden_size 64", "num_attention_heads 5"});
}

TEST(ModelConfig, UnsupportedVariantsAreRejected) {
  const std::vector<std::pair<std::string, json>> cases = {
      {"relative_attention", false},  {"position_biased_input", true}, {"type_vocab_size", 2},
      {"share_att_key", false},       {"pos_att_type", "c2p"},         {"pos_att_type", "p2c|c2p|p2p"},
      {"max_relative_positions", 512}, {"position_buckets", -1},       {"hidden_act", "relu"},
      {"norm_rel_ebd", "none"},       {"conv_kernel_size", 4},         {"conv_kernel_size", 0},
      {"conv_act", "tanh"},           {"embedding_size", 128},         {"model_type", "bert"}};
  for (const auto& [key, value] : cases) {
    SCOPED_TRACE(key + " = " + value.dump());
    json j = tiny_config_json();
    j[key] = value;
    expect_model_error([&] { parse(j); }, {"config.json", key, "RexUniNLU"});
  }
}

TEST(ModelConfig, StockDebertaDefaultsAreRejected) {
  // Without these keys DebertaV2Config describes a stock DeBERTa-v2, not RexUniNLU.
  for (const char* key : {"relative_attention", "share_att_key", "position_biased_input", "conv_kernel_size",
                          "norm_rel_ebd", "pos_att_type"}) {
    SCOPED_TRACE(key);
    json j = tiny_config_json();
    j.erase(key);
    expect_model_error([&] { parse(j); }, {key, "RexUniNLU"});
  }
}

TEST(ModelConfig, InvalidJsonAndMissingFile) {
  expect_model_error([] { parse_model_config("{\"hidden_size\": 64,", "config.json"); }, {"config.json", "JSON"});
  expect_model_error([] { parse_model_config("[1, 2]", "config.json"); }, {"config.json", "object"});
  expect_error(ErrorKind::kIo, [] { load_model_config("/nonexistent/config.json"); }, {"/nonexistent/config.json"});
}

}  // namespace
}  // namespace rexnlu::models::rex
