// A small JSON Schema checker for the subset openapi.json uses ($ref, type, enum, required,
// properties, additionalProperties: false, items, minItems, maxItems, oneOf), so the OpenAPI test
// can check real responses against the document.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rexnlu::server::testing {

// Follows "#/a/b" references within `document`.
const nlohmann::ordered_json& resolve_ref(const nlohmann::ordered_json& document, const nlohmann::ordered_json& node);

// What in `value` breaks `schema` (empty = valid), each message with its JSON path.
std::vector<std::string> schema_violations(const nlohmann::ordered_json& value, const nlohmann::ordered_json& schema,
                                           const nlohmann::ordered_json& document, const std::string& where = "$");

}  // namespace rexnlu::server::testing
