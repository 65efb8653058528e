// The JSON bodies of POST /v1/extract and POST /extract -> engine requests, and the engine's
// results -> the response body.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rexnlu/engine.h"

namespace rexnlu::server {

using Json = nlohmann::ordered_json;

struct ExtractCall {
  std::vector<Request> requests;
  bool many = false;                     // "texts" was given: the answer is {"results": [...]}
  bool echo_text = false;                // a task rewrote the text: results carry the text their offsets refer to
};

// /v1/extract: {"text" | "texts", "schema" | "task" (+ "labels", "text2", "question"), "options"?}.
// /extract (alias = true): {"text", "schema"} only, as the original service took it.
// Throws rexnlu::Error (kInvalidInput) naming the offending field.
ExtractCall parse_extract_call(const Json& body, bool alias, int64_t max_texts);

// The response body for results that all succeeded (to_json() of each, plus "text" when echoed).
Json extract_response(const ExtractCall& call, const std::vector<Result>& results);

// {"error": message, "error_type": type}: the body of every error response.
std::string error_body(const std::string& message, const std::string& type);

// Serializes without throwing on invalid UTF-8 (replaced by U+FFFD).
std::string dump_json(const Json& j);

}  // namespace rexnlu::server
