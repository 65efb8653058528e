#include <gtest/gtest.h>

#include "rexnlu/error.h"
#include "uie/schema.h"

namespace rexnlu::uie {
namespace {

TEST(Schema, KeepsKeyOrderAndLegalPaths) {
  Schema s = Schema::parse(R"j({"人物": {"任职于(组织机构)": null, "毕业院校(组织机构)": {}}, "组织机构": null})j");
  const auto& root = s.node(Schema::kRoot);
  ASSERT_EQ(root.children.size(), 2u);
  EXPECT_EQ(s.node(root.children[0]).type, "人物");
  EXPECT_EQ(s.node(root.children[1]).type, "组织机构");
  const auto& person = s.node(root.children[0]);
  ASSERT_EQ(person.children.size(), 2u);
  EXPECT_EQ(s.node(person.children[0]).type, "任职于(组织机构)");
  EXPECT_TRUE(s.is_leaf(person.children[1]));  // {} is a leaf
  EXPECT_TRUE(s.is_legal({"人物", "任职于(组织机构)"}));
  EXPECT_TRUE(s.is_legal({"组织机构"}));
  EXPECT_FALSE(s.is_legal({"人物"}));  // not a leaf: a subject alone is never output
  EXPECT_EQ(s.legal_paths().size(), 3u);
  EXPECT_EQ(s.depth(), 2);
}

TEST(Schema, AcceptsAJsonStringHoldingTheSchema) {
  Schema s = Schema::parse(R"j("{\"正向情感\": null, \"负向情感\": null}")j");
  EXPECT_EQ(s.node(Schema::kRoot).children.size(), 2u);
}

void expect_input_error(const std::string& json, const std::string& fragment) {
  try {
    Schema::parse(json);
    FAIL() << "no error for " << json;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Schema, RejectsBadSchemas) {
  expect_input_error("[1, 2]", "must be a JSON object");
  expect_input_error("42", "must be a JSON object");
  expect_input_error("{}", "empty");
  expect_input_error("{\"a\": 1}", "'a'");
  expect_input_error("{\"a\": {\"b\": [1]}}", "'a/b'");
  expect_input_error("{\"a\": \"x\"}", "must be null");
  expect_input_error("{\"a\": ", "not valid JSON");
  expect_input_error("\"\\u00ff", "not valid JSON");
  std::string deep = "null";
  for (int i = 0; i < kMaxSchemaDepth + 1; ++i) deep = "{\"t" + std::to_string(i) + "\": " + deep + "}";
  expect_input_error(deep, "deeper than");
  std::string ok = "null";
  for (int i = 0; i < kMaxSchemaDepth; ++i) ok = "{\"t" + std::to_string(i) + "\": " + ok + "}";
  EXPECT_EQ(Schema::parse(ok).depth(), kMaxSchemaDepth);
}

}  // namespace
}  // namespace rexnlu::uie
