#include "models/rex_tensor_specs.h"

#include <string>

namespace rexnlu::models {

std::vector<io::TensorSpec> rex_tensor_specs(const io::ModelConfig& config, int64_t embedding_rows) {
  const int64_t h = config.hidden_size;
  const int64_t ffn = config.intermediate_size;
  std::vector<io::TensorSpec> specs;
  auto add = [&specs](std::string name, std::vector<int64_t> shape) {
    specs.push_back({std::move(name), DType::kF32, std::move(shape)});
  };
  // Linear(in -> out): weight [out, in], bias [out]; LayerNorm(h): weight, bias [h].
  auto linear = [&add](const std::string& prefix, int64_t out, int64_t in) {
    add(prefix + ".weight", {out, in});
    add(prefix + ".bias", {out});
  };
  auto layer_norm = [&add, h](const std::string& prefix) {
    add(prefix + ".weight", {h});
    add(prefix + ".bias", {h});
  };

  add("plm.embeddings.word_embeddings.weight", {embedding_rows, h});
  specs.back().rows_meaning = "vocab.txt + 4 added tokens = " + std::to_string(embedding_rows) + " tokens";
  layer_norm("plm.embeddings.LayerNorm");
  for (int l = 0; l < config.num_hidden_layers; ++l) {
    const std::string p = "plm.encoder.layer." + std::to_string(l);
    linear(p + ".attention.self.query_proj", h, h);
    linear(p + ".attention.self.key_proj", h, h);
    linear(p + ".attention.self.value_proj", h, h);
    linear(p + ".attention.output.dense", h, h);
    layer_norm(p + ".attention.output.LayerNorm");
    linear(p + ".intermediate.dense", ffn, h);
    linear(p + ".output.dense", h, ffn);
    layer_norm(p + ".output.LayerNorm");
  }
  add("plm.encoder.rel_embeddings.weight", {2 * int64_t{config.position_buckets}, h});
  layer_norm("plm.encoder.LayerNorm");
  add("plm.encoder.conv.conv.weight", {h, h, config.conv_kernel_size});  // Conv1d [out, in, k]
  add("plm.encoder.conv.conv.bias", {h});
  layer_norm("plm.encoder.conv.LayerNorm");
  linear("ffnq", h, h);
  linear("ffnk", h, h);
  add("rotary_emb.freqs", {h / 2});
  return specs;
}

}  // namespace rexnlu::models
