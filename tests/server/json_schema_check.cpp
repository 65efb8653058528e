#include "server/json_schema_check.h"

#include <stdexcept>

namespace rexnlu::server::testing {

using Json = nlohmann::ordered_json;

const Json& resolve_ref(const Json& document, const Json& node) {
  const Json* at = &node;
  while (at->is_object() && at->contains("$ref")) {
    const std::string ref = (*at)["$ref"].get<std::string>();
    if (ref.rfind("#/", 0) != 0) throw std::runtime_error("unsupported $ref " + ref);
    at = &document.at(Json::json_pointer(ref.substr(1)));
  }
  return *at;
}

namespace {

bool has_type(const Json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "integer") return v.is_number_integer();
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  throw std::runtime_error("unknown type " + type);
}

}  // namespace

std::vector<std::string> schema_violations(const Json& value, const Json& schema_node, const Json& document,
                                           const std::string& where) {
  const Json& schema = resolve_ref(document, schema_node);
  std::vector<std::string> out;
  auto fail = [&](const std::string& m) { out.push_back(where + ": " + m); };
  if (schema.contains("type") && !has_type(value, schema["type"].get<std::string>())) {
    fail("expected " + schema["type"].get<std::string>() + ", got " + value.dump());
    return out;
  }
  if (schema.contains("enum")) {
    bool found = false;
    for (const Json& e : schema["enum"]) found = found || e == value;
    if (!found) fail(value.dump() + " is not one of " + schema["enum"].dump());
  }
  if (schema.contains("oneOf")) {
    int matches = 0;
    for (const Json& option : schema["oneOf"]) matches += schema_violations(value, option, document, where).empty();
    if (matches != 1) fail("matches " + std::to_string(matches) + " of oneOf, not exactly 1");
  }
  if (value.is_object()) {
    for (const Json& key : schema.value("required", Json::array())) {
      if (!value.contains(key.get<std::string>())) fail("missing required " + key.dump());
    }
    const Json properties = schema.value("properties", Json::object());
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (properties.contains(it.key())) {
        for (auto& v : schema_violations(it.value(), properties[it.key()], document, where + "." + it.key())) out.push_back(v);
      } else if (schema.value("additionalProperties", true) == false) {
        fail("property " + it.key() + " is not in the schema");
      }
    }
  }
  if (value.is_array()) {
    if (schema.contains("minItems") && value.size() < schema["minItems"].get<size_t>()) fail("too few items");
    if (schema.contains("maxItems") && value.size() > schema["maxItems"].get<size_t>()) fail("too many items");
    if (schema.contains("items")) {
      for (size_t i = 0; i < value.size(); ++i) {
        for (auto& v : schema_violations(value[i], schema["items"], document, where + "[" + std::to_string(i) + "]")) out.push_back(v);
      }
    }
  }
  return out;
}

}  // namespace rexnlu::server::testing
