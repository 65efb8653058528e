// Requests and results as JSON: the one parser and the one serializer that the CLI (JSON lines)
// and the HTTP service (request bodies) share.
//   request: {"text" | "texts", "schema" | "task" (+ "labels", "text2", "question"), "options"?}
//   result:  {"output": [[{"type", "span", "offset": [s, e], "probability"?}...]...], "warnings"?}
//            or {"error": "..."}
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "rexnlu/engine.h"

namespace rexnlu {

using Json = nlohmann::ordered_json;

// Parses JSON that comes from outside (request bodies, JSON lines, --schema/--options) with its
// nesting capped at 64 levels BEFORE parsing, so deep input cannot overflow the stack. Throws
// nlohmann::json::exception (a parse error, or too deep), which callers report with its source.
Json parse_json_input(std::string_view text);

// Keys: link_threshold, max_len, stride, hint_max_len, dedup, probabilities, byte_offsets,
// max_batch_cells, applied over `base`. Unknown keys, wrong types or a value outside its own range
// throw rexnlu::Error (kInvalidInput) naming the option and the value (docs/options.md). The ranges
// that depend on other options (hint_max_len, stride vs max_len) are checked by the engine on each
// request's final options.
Options options_from_json(const Json& j, Options base = {});

struct JsonRequestRules {
  bool allow_texts = false;   // "texts": [...] (several texts, one schema; the HTTP service)
  int64_t max_texts = 1;      // with allow_texts
  bool strict_keys = false;   // an unknown field is an error (HTTP) instead of ignored (CLI lines carry "id")
  Options base;               // what "options" is applied over
};

struct JsonRequests {
  std::vector<Request> requests;  // one per text
  bool many = false;              // "texts" was given
  bool echo_text = false;         // a task rewrote the text: results should carry the text their offsets refer to
};

// One request object -> engine requests. A schema is an object or a string holding one; an
// explicit "schema" overrides a task's. Throws rexnlu::Error (kInvalidInput) naming the field.
JsonRequests requests_from_json(const Json& body, const JsonRequestRules& rules);

// The result as JSON (Result::to_json() is its text).
Json result_json(const Result& result);

// Serializes without throwing on invalid UTF-8 (replaced by U+FFFD).
std::string dump_json(const Json& j);

}  // namespace rexnlu
