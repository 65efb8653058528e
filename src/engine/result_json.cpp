// Result::to_json: the original pipeline's {"output": ...} shape plus probability and warnings.
#include <nlohmann/json.hpp>

#include "rexnlu/result.h"

namespace rexnlu {

std::string Result::to_json() const {
  nlohmann::ordered_json j;
  if (!ok()) {
    j["error"] = error;
  } else {
    nlohmann::ordered_json output = nlohmann::ordered_json::array();
    for (const Path& path : paths) {
      nlohmann::ordered_json p = nlohmann::ordered_json::array();
      for (const Span& s : path) {
        nlohmann::ordered_json item = {{"type", s.type}, {"span", s.span}, {"offset", {s.start, s.end}}};
        if (with_probabilities) item["probability"] = s.probability;
        p.push_back(std::move(item));
      }
      output.push_back(std::move(p));
    }
    j["output"] = std::move(output);
    if (!warnings.empty()) j["warnings"] = warnings;
  }
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace rexnlu
