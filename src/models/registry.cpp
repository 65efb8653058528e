#include "models/registry.h"

#include <string>

#include "common/json_input.h"
#include "io/regular_file.h"
#include "models/rex/rex_family.h"
#include "models/siamese_uie/siamese_family.h"
#include "rexnlu/error.h"

namespace rexnlu::models {

const std::vector<const ModelFamily*>& model_families() {
  static const std::vector<const ModelFamily*> families = {&rex::kFamily, &siamese::kFamily};
  return families;
}

const ModelFamily& family_of(const std::filesystem::path& model_dir) {
  io::require_model_dir(model_dir);  // a mistyped --model is named as such, not as a missing config.json
  const std::filesystem::path path = model_dir / "config.json";
  // A regular file of bounded size, nesting capped before parsing (the family's own config reader
  // then applies its rules and ranges).
  const std::string text = io::read_regular_file(path, io::kMaxConfigBytes, "a model config");
  nlohmann::json config;
  try {
    config = parse_json(text);
  } catch (const nlohmann::json::exception& e) {
    throw ModelError(path.string() + ": not valid JSON: " + e.what());
  }
  if (!config.is_object()) throw ModelError(path.string() + ": not a JSON object");
  std::string known;
  for (const ModelFamily* f : model_families()) {
    if (f->recognizes(config)) return *f;
    known += std::string(known.empty() ? "" : "; ") + f->name + " (" + f->recognized_by + ")";
  }
  const auto type = config.find("model_type");
  throw ModelError(path.string() + ": model_type " + (type == config.end() ? std::string("(missing)") : type->dump()) +
                   " is not supported: rexnlu supports only the model families " + known);
}

}  // namespace rexnlu::models
