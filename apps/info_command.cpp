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
#include "request_json.h"
#include "rexnlu/engine.h"
#include "text_table.h"

namespace rexnlu::apps {
namespace {

namespace fs = std::filesystem;

struct InfoFlags {
  std::string model;
  LoadOptions load;
  bool json = false;
};

std::string model_source(const std::string& model) {
  if (!model.empty()) return "--model";
  if (const char* env = std::getenv("REXNLU_MODEL"); env && *env) return "$REXNLU_MODEL";
  return "bundled default";
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
  // The one load path (Engine::load): it checks every tensor and says what it loaded.
  const Engine engine = Engine::load(dir, f.load);
  const ModelInfo& info = engine.model_info();
  const std::vector<std::string>& warnings = engine.load_warnings();
  // Absolute paths when they can be resolved (they always can for a directory that loaded).
  std::error_code dir_ec, file_ec, size_ec;
  const fs::path absolute = fs::weakly_canonical(dir, dir_ec);
  const fs::path file = fs::weakly_canonical(info.checkpoint, file_ec);
  const auto file_bytes = static_cast<int64_t>(fs::file_size(info.checkpoint, size_ec));

  const fs::path checkpoint = file_ec ? fs::path(info.checkpoint) : file;
  Json j = {{"model_dir", (dir_ec ? dir : absolute).string()},
            {"source", model_source(f.model)},
            {"family", info.family},
            {"model_type", info.model_type},
            {"layers", info.layers},
            {"hidden_size", info.hidden_size},
            {"attention_heads", info.attention_heads},
            {"head_dim", info.head_dim},
            {"intermediate_size", info.intermediate_size},
            {"max_position_embeddings", info.max_position_embeddings},
            {"position_buckets", info.position_buckets},
            {"vocab_size", info.vocab_size},
            {"config_vocab_size", info.config_vocab_size},
            {"parameters", info.parameters},
            {"parameter_bytes", info.parameter_bytes},
            {"dtypes", info.dtypes},
            {"tensors", info.checkpoint_tensors},
            {"checkpoint", checkpoint.string()},
            {"checkpoint_format", info.checkpoint_format},
            {"checkpoint_bytes", file_bytes},
            {"backend", info.backend},
            {"precision", info.precision},
            {"warnings", warnings}};
  if (f.json) {
    std::cout << j.dump(2) << '\n';
    return;
  }
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"model", j["model_dir"].get<std::string>()},
      {"loaded from", j["source"].get<std::string>()},
      {"family", info.family},
      {"architecture", info.architecture},
      {"layers / hidden / heads / FFN", std::to_string(info.layers) + " / " + std::to_string(info.hidden_size) + " / " +
                                            std::to_string(info.attention_heads) + " / " +
                                            std::to_string(info.intermediate_size)},
      {"max positions / buckets",
       std::to_string(info.max_position_embeddings) + " / " + std::to_string(info.position_buckets)},
      {"vocabulary", with_commas(info.vocab_size) + " tokens (vocab.txt or tokenizer.json " + with_commas(info.vocab_size - info.added_tokens) +
                         " + " + std::to_string(info.added_tokens) + " added)"},
      {"parameters", with_commas(info.parameters) + " (" + info.dtypes + ", " +
                         format_fixed(static_cast<double>(info.parameter_bytes) / 1e6, 1) + " MB)"},
      {"checkpoint", checkpoint.string()},
      {"format", info.checkpoint_format + ", " + std::to_string(info.checkpoint_tensors) + " tensors, " +
                     format_fixed(static_cast<double>(file_bytes) / 1e6, 1) + " MB"},
      {"backend", info.backend},
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
  add_load_options(*cmd, f->load);
  cmd->add_flag("--json", f->json, "print JSON");
  cmd->callback([f] { run_command("info", [&] { run_info(*f); }); });
}

}  // namespace rexnlu::apps
