// A request's schema: a nested JSON object of type names whose leaves are null or {} (spec 6).
// Key order is kept (it is the order the user wrote), types are sorted only when hints are built.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace rexnlu::uie {

// Deeper schemas are refused: every level costs a forward pass, and no RexUniNLU task needs more
// than 3 levels (EE/RE use 2, hierarchical classification 2-3).
inline constexpr int kMaxSchemaDepth = 8;

// An operator's bounds on one request's schema (rexnlu::Limits); past them, a kLimitExceeded error.
struct SchemaLimits {
  int64_t max_types = INT64_MAX;    // type names, all levels together
  int max_depth = kMaxSchemaDepth;  // levels
};

class Schema {
 public:
  struct Node {
    std::string type;           // empty for the root
    std::vector<int> children;  // node indices, in the schema's key order; empty = leaf
  };

  // `json_text` is a JSON object, or a JSON string holding one (the original accepts both).
  // Throws rexnlu::Error (kInvalidInput) naming the offending key path.
  // Past `limits`: rexnlu::Error (kLimitExceeded) naming the limit and the schema's value.
  static Schema parse(std::string_view json_text, const SchemaLimits& limits = {});
  static Schema from_json(const nlohmann::ordered_json& value, const SchemaLimits& limits = {});

  static constexpr int kRoot = 0;
  const Node& node(int index) const { return nodes_.at(index); }
  bool is_leaf(int index) const { return nodes_.at(index).children.empty(); }
  int depth() const { return depth_; }
  int64_t types() const { return static_cast<int64_t>(nodes_.size()) - 1; }  // type names, all levels

  // Root-to-leaf type paths: a result path is output only when its types form one of these.
  bool is_legal(const std::vector<std::string>& types) const { return legal_.count(types) > 0; }
  const std::set<std::vector<std::string>>& legal_paths() const { return legal_; }

 private:
  void add_object(const nlohmann::ordered_json& object, const std::string& path, int depth);
  void collect_legal(int index, std::vector<std::string>& path);

  std::vector<Node> nodes_;
  std::set<std::vector<std::string>> legal_;
  int depth_ = 0;
};

}  // namespace rexnlu::uie
