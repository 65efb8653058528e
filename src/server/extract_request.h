// The JSON bodies of POST /v1/extract and POST /extract -> engine requests, and the engine's
// results -> the response body.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rexnlu/engine.h"
#include "rexnlu/json.h"

namespace rexnlu::server {

using Json = rexnlu::Json;
// many: "texts" was given, the answer is {"results": [...]}; echo_text: a task rewrote the text,
// results carry the text their offsets refer to.
using ExtractCall = JsonRequests;

// /v1/extract: {"text" | "texts", "schema" | "task" (+ "labels", "text2", "question"), "options"?}.
// /extract (alias = true): {"text", "schema"} only, as the original service took it.
// Throws rexnlu::Error (kInvalidInput) naming the offending field. The parsing itself is the
// public requests_from_json (shared with the CLI).
ExtractCall parse_extract_call(const Json& body, bool alias, int64_t max_texts);

// The response body for results that all succeeded (result_json() of each, plus "text" when echoed).
Json extract_response(const ExtractCall& call, const std::vector<Result>& results);

// {"error": message, "error_type": type}: the body of every error response.
std::string error_body(const std::string& message, const std::string& type);

}  // namespace rexnlu::server
