#include "info_command.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "command_util.h"
#include "io/checkpoint.h"
#include "io/model_config.h"
#include "models/rex_tensor_specs.h"
#include "request_json.h"
#include "text/tokenizer.h"
#include "text_table.h"

namespace rexnlu::apps {
namespace {

namespace fs = std::filesystem;

struct InfoFlags {
  std::string model;
  bool json = false;
};

std::string model_source(const std::string& model) {
  if (!model.empty()) return "--model";
  if (const char* env = std::getenv("REXNLU_MODEL"); env && *env) return "$REXNLU_MODEL";
  return "bundled default";
}

std::string checkpoint_format(const fs::path& file) {
  if (file.filename() == "model.safetensors") return "safetensors";
  std::ifstream in(file, std::ios::binary);
  char magic[2] = {0, 0};
  in.read(magic, 2);
  // torch.save >= 1.6 writes a zip archive; older versions a bare pickle stream.
  return magic[0] == 'P' && magic[1] == 'K' ? "PyTorch zip (torch.save)" : "PyTorch legacy pickle (torch.save)";
}

std::string with_commas(int64_t v) {
  std::string digits = std::to_string(v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

void run_info(const InfoFlags& f) {
  const fs::path dir = resolve_model_dir(f.model);
  const text::Tokenizer tokenizer = text::Tokenizer::from_model_dir(dir);
  const io::ModelConfig config = io::load_model_config(dir / "config.json");
  const io::TensorStore weights = io::load_checkpoint(dir);
  // The same checks as Engine::load (throws on a missing or misshapen tensor).
  const auto specs = models::rex_tensor_specs(config, tokenizer.vocab_size());
  std::vector<std::string> warnings;
  for (const std::string& name : io::validate_tensors(weights, specs)) warnings.push_back("tensor '" + name + "' is not used");
  for (std::string& w : io::check_tensor_values(weights, specs)) warnings.push_back(std::move(w));
  int64_t parameters = 0, bytes = 0;
  std::set<std::string> dtypes;
  for (const auto& spec : specs) {
    const TensorView& t = weights.at(spec.name);
    parameters += t.numel();
    bytes += static_cast<int64_t>(t.nbytes());
    dtypes.insert(std::string(dtype_name(t.dtype)));
  }
  std::string dtype_list;
  for (const auto& d : dtypes) dtype_list += (dtype_list.empty() ? "" : ",") + d;
  // Absolute paths when they can be resolved (they always can for a directory that loaded).
  std::error_code dir_ec, file_ec, size_ec;
  const fs::path absolute = fs::weakly_canonical(dir, dir_ec);
  const fs::path file = fs::weakly_canonical(weights.source(), file_ec);
  const auto file_bytes = static_cast<int64_t>(fs::file_size(weights.source(), size_ec));

  Json j = {{"model_dir", (dir_ec ? dir : absolute).string()},
            {"source", model_source(f.model)},
            {"model_type", config.model_type},
            {"layers", config.num_hidden_layers},
            {"hidden_size", config.hidden_size},
            {"attention_heads", config.num_attention_heads},
            {"head_dim", config.head_dim()},
            {"intermediate_size", config.intermediate_size},
            {"max_position_embeddings", config.max_position_embeddings},
            {"position_buckets", config.position_buckets},
            {"vocab_size", tokenizer.vocab_size()},
            {"config_vocab_size", config.vocab_size},
            {"parameters", parameters},
            {"parameter_bytes", bytes},
            {"dtypes", dtype_list},
            {"tensors", weights.size()},
            {"checkpoint", (file_ec ? weights.source() : file).string()},
            {"checkpoint_format", checkpoint_format(weights.source())},
            {"checkpoint_bytes", file_bytes},
            {"warnings", warnings}};
  if (f.json) {
    std::cout << j.dump(2) << '\n';
    return;
  }
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"model", j["model_dir"].get<std::string>()},
      {"loaded from", j["source"].get<std::string>()},
      {"architecture", config.model_type + " encoder + rotary token-pair link head (RexUniNLU)"},
      {"layers / hidden / heads / FFN", std::to_string(config.num_hidden_layers) + " / " +
                                            std::to_string(config.hidden_size) + " / " +
                                            std::to_string(config.num_attention_heads) + " / " +
                                            std::to_string(config.intermediate_size)},
      {"max positions / buckets",
       std::to_string(config.max_position_embeddings) + " / " + std::to_string(config.position_buckets)},
      {"vocabulary", with_commas(tokenizer.vocab_size()) + " tokens (vocab.txt " +
                         with_commas(tokenizer.vocab_size() - 4) + " + 4 added)"},
      {"parameters", with_commas(parameters) + " (" + dtype_list + ", " +
                         format_fixed(static_cast<double>(bytes) / 1e6, 1) + " MB)"},
      {"checkpoint", (file_ec ? weights.source() : file).string()},
      {"format", checkpoint_format(weights.source()) + ", " + std::to_string(weights.size()) + " tensors, " +
                     format_fixed(static_cast<double>(file_bytes) / 1e6, 1) + " MB"},
      {"warnings", warnings.empty() ? "none" : std::to_string(warnings.size())},
  };
  for (const auto& [key, value] : rows) std::cout << key << ':' << std::string(31 - key.size(), ' ') << value << '\n';
  for (const auto& w : warnings) std::cout << "warning: " << w << '\n';
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Describe a model: architecture, parameter count, vocabulary, checkpoint file");
  auto f = std::make_shared<InfoFlags>();
  add_model_option(*cmd, f->model);
  cmd->add_flag("--json", f->json, "print JSON");
  cmd->callback([f] { run_command("info", [&] { run_info(*f); }); });
}

}  // namespace rexnlu::apps
