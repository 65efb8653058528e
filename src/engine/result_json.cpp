// Result as JSON: the original pipeline's {"output": ...} shape plus probability and warnings,
// built once (result_json) and written by Result::to_json, the CLI and the HTTP service.
#include "rexnlu/json.h"
#include "rexnlu/result.h"

namespace rexnlu {

Json result_json(const Result& r) {
  Json j;
  if (!r.ok()) {
    j["error"] = r.error;
    return j;
  }
  Json output = Json::array();
  for (const Path& path : r.paths) {
    Json p = Json::array();
    for (const Span& s : path) {
      Json item = {{"type", s.type}, {"span", s.span}, {"offset", {s.start, s.end}}};
      if (r.with_probabilities) item["probability"] = s.probability;
      p.push_back(std::move(item));
    }
    output.push_back(std::move(p));
  }
  j["output"] = std::move(output);
  if (!r.warnings.empty()) j["warnings"] = r.warnings;
  return j;
}

std::string Result::to_json() const { return dump_json(result_json(*this)); }

}  // namespace rexnlu
