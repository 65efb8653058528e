#include "uie/schema.h"

#include "common/json_input.h"
#include "rexnlu/error.h"

namespace rexnlu::uie {

Schema Schema::parse(std::string_view json_text, const SchemaLimits& limits) {
  nlohmann::ordered_json value;
  try {
    value = parse_json<nlohmann::ordered_json>(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("schema is not valid JSON: ") + e.what());
  }
  return from_json(value, limits);
}

Schema Schema::from_json(const nlohmann::ordered_json& value, const SchemaLimits& limits) {
  if (value.is_string()) {  // a JSON string holding the schema, as json.loads(schema) in the original
    return parse(value.get<std::string>(), limits);
  }
  if (!value.is_object()) {
    throw InputError(std::string("schema must be a JSON object of type names, got ") + value.type_name());
  }
  if (value.empty()) throw InputError("schema is empty: it needs at least one type name");
  Schema schema;
  schema.nodes_.push_back(Node{});
  schema.add_object(value, "", 1);
  if (schema.types() > limits.max_types) {
    throw LimitError("schema has " + std::to_string(schema.types()) + " type names; the limit max_schema_types is " +
                     std::to_string(limits.max_types));
  }
  if (schema.depth() > limits.max_depth) {
    throw LimitError("schema is " + std::to_string(schema.depth()) + " levels deep; the limit max_schema_depth is " +
                     std::to_string(limits.max_depth));
  }
  std::vector<std::string> path;
  schema.collect_legal(kRoot, path);
  return schema;
}

// Adds the keys of `object` as children of the node pushed last before the call (the root, or the
// key that holds `object`), depth first, and records the deepest level in depth_.
void Schema::add_object(const nlohmann::ordered_json& object, const std::string& path, int depth) {
  if (depth > kMaxSchemaDepth) {
    throw InputError("schema is nested deeper than " + std::to_string(kMaxSchemaDepth) + " levels at '" + path + "'");
  }
  if (depth > depth_) depth_ = depth;
  const int parent = static_cast<int>(nodes_.size()) - 1;
  std::vector<int> children;
  for (auto it = object.begin(); it != object.end(); ++it) {
    const std::string key_path = path.empty() ? it.key() : path + "/" + it.key();
    const auto& sub = it.value();
    if (!sub.is_null() && !sub.is_object()) {
      throw InputError("schema value at '" + key_path + "' must be null, {} or an object of sub-types, got " +
                       sub.type_name());
    }
    const int index = static_cast<int>(nodes_.size());
    nodes_.push_back(Node{it.key(), {}});
    children.push_back(index);
    if (sub.is_object() && !sub.empty()) add_object(sub, key_path, depth + 1);
  }
  nodes_[parent].children = std::move(children);
}

void Schema::collect_legal(int index, std::vector<std::string>& path) {
  const Node& n = nodes_[index];
  if (index != kRoot) path.push_back(n.type);
  if (n.children.empty()) {
    if (index != kRoot) legal_.insert(path);
  } else {
    for (int child : n.children) collect_legal(child, path);
  }
  if (index != kRoot) path.pop_back();
}

}  // namespace rexnlu::uie
