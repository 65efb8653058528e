#include "rexnlu/default_model.h"

#include <cstdlib>
#include <system_error>
#include <vector>

#ifndef REXNLU_SOURCE_MODELS_DIR
#error "REXNLU_SOURCE_MODELS_DIR must be defined by the build"
#endif

namespace rexnlu {

const char* default_model_name() { return "rexnlu-demo-zh-small"; }

std::filesystem::path default_model_dir() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("REXNLU_MODEL"); env && *env) return fs::path(env);

  std::vector<fs::path> candidates;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(exe.parent_path().parent_path() / "models" / default_model_name());
  candidates.push_back(fs::current_path(ec) / "models" / default_model_name());
  candidates.push_back(fs::path(REXNLU_SOURCE_MODELS_DIR) / default_model_name());
  for (const auto& dir : candidates)
    if (fs::is_regular_file(dir / "config.json", ec)) return dir;
  return candidates.back();
}

}  // namespace rexnlu
