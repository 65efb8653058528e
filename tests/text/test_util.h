// Helpers shared by the text tests: fixture paths, reading JSON-lines files split on '\n' only.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/rex/rex_family.h"
#include "text/tokenizer.h"

namespace rexnlu::text::testing {

inline std::filesystem::path test_data(const std::string& name) {
  return std::filesystem::path(REXNLU_TEST_DATA) / name;
}

inline std::filesystem::path tiny_model_dir() {
  return std::filesystem::path(REXNLU_MODELS_DIR) / "rexuninlu_tiny";
}

inline const Tokenizer& tiny_tokenizer() {
  static const Tokenizer tokenizer = Tokenizer::from_model_dir(tiny_model_dir(), models::rex::added_tokens());
  return tokenizer;
}

// Lines of a JSON-lines file; only '\n' separates records (texts may hold U+2028 etc.).
inline std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream all;
  all << in.rdbuf();
  const std::string text = all.str();
  std::vector<nlohmann::json> records;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    if (end > pos) records.push_back(nlohmann::json::parse(text.substr(pos, end - pos)));
    pos = end + 1;
  }
  return records;
}

inline std::vector<Offset> offsets_of(const nlohmann::json& pairs) {
  std::vector<Offset> out;
  for (const auto& p : pairs) out.push_back({p[0].get<int32_t>(), p[1].get<int32_t>()});
  return out;
}

}  // namespace rexnlu::text::testing
