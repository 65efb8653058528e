// What an Engine holds: the tokenizer and a LinkModel (the real network, or a fake in tests), as
// the model family's load returned them (models/registry.h); for a pointer-network family
// (SiameseUIE) a PointerModel instead, and `model` stays empty.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/link_model.h"
#include "models/pointer_model.h"
#include "rexnlu/engine.h"
#include "text/tokenizer.h"

namespace rexnlu {

struct Engine::Impl {
  text::Tokenizer tokenizer;
  std::unique_ptr<models::LinkModel> model;
  std::vector<std::string> load_warnings;
  ModelInfo info = {};
  Limits limits = {};
  std::unique_ptr<models::PointerModel> pointer_model = nullptr;
};

}  // namespace rexnlu
