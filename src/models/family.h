// A model family: what a checkpoint directory of one kind of model needs to become a runnable
// model (config parsing, special tokens, network, weights), picked by the registry
// (models/registry.h) from config.json. The Rex family (RexUniNLU: DeBERTa-v2 + token-pair link
// head) lives in models/rex/, the SiameseUIE family (BERT + start/end pointer head) in
// models/siamese_uie/; another family is a new folder plus one line in registry.cpp.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/link_model.h"
#include "models/pointer_model.h"
#include "rexnlu/load_options.h"
#include "rexnlu/model_info.h"
#include "text/tokenizer.h"

namespace rexnlu::models {

// What loading a directory gives the engine.
struct LoadedModel {
  text::Tokenizer tokenizer;           // with the family's special tokens
  std::unique_ptr<LinkModel> network;  // the model behind the token-pair link pipeline (src/uie)
  ModelInfo info;
  std::vector<std::string> warnings;   // e.g. unused tensors in the checkpoint
  // Set instead of `network` by a pointer-network family (SiameseUIE, src/uie/siamese_run.h).
  std::unique_ptr<PointerModel> pointer_network = nullptr;
};

struct ModelFamily {
  const char* name;           // "rex-uninlu"
  const char* recognized_by;  // for errors: what in config.json selects it, e.g. "model_type \"deberta-v2\""
  bool (*recognizes)(const nlohmann::json& config);
  // The special tokens its tokenizer appends to vocab.txt (its prompts use them).
  const std::vector<std::string>& (*added_tokens)();
  // Loads the directory on the backend `options` ask for; rexnlu::Error on a bad directory or an
  // unsupported device / precision.
  LoadedModel (*load)(const std::filesystem::path& model_dir, const LoadOptions& options);
};

}  // namespace rexnlu::models
