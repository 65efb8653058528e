// What the e2e fixture cases of the original pipelines (tests/data/*/e2e_cases.jsonl) compare: the
// output paths in the fixtures' shape, and the options a RexUniNLU case was run with.
#pragma once

#include <nlohmann/json.hpp>

#include "rexnlu/engine.h"

namespace rexnlu::testing {

// [[{"type", "span", "offset": [start, end]}, ...], ...] as the fixtures store `expected`.
inline nlohmann::ordered_json paths_json(const Result& r) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& path : r.paths) {
    nlohmann::ordered_json p = nlohmann::ordered_json::array();
    for (const auto& s : path) p.push_back({{"type", s.type}, {"span", s.span}, {"offset", {s.start, s.end}}});
    out.push_back(p);
  }
  return out;
}

// A RexUniNLU e2e case's options: no de-duplication (the original keeps repeated paths) and the
// case's max_len, stride and hint_max_len where it sets them.
inline Options rex_case_options(const nlohmann::ordered_json& c) {
  Options o;
  o.dedup = false;
  if (c.contains("options") && c["options"].is_object()) {
    o.max_len = c["options"].value("max_len", 512);
    o.stride = c["options"].value("stride", 32);
    o.hint_max_len = c["options"].value("hint_max_len", 256);
  }
  return o;
}

}  // namespace rexnlu::testing
