#include "models/registry.h"

#include <fstream>
#include <sstream>
#include <string>

#include "models/rex/rex_family.h"
#include "rexnlu/error.h"

namespace rexnlu::models {

const std::vector<const ModelFamily*>& model_families() {
  static const std::vector<const ModelFamily*> families = {&rex::kFamily};
  return families;
}

const ModelFamily& family_of(const std::filesystem::path& model_dir) {
  const std::filesystem::path path = model_dir / "config.json";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path.string() + ": cannot open the model config");
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) throw IoError(path.string() + ": cannot read the model config");
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(text.str());
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
