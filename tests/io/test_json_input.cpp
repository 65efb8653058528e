// The JSON nesting cap of src/common/json_input.h, which every JSON reader of rexnlu goes through.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "common/json_input.h"

namespace rexnlu {
namespace {

std::string nested(const std::string& open, const std::string& close, int depth, const std::string& inner = "1") {
  std::string s;
  for (int i = 0; i < depth; ++i) s += open;
  s += inner;
  for (int i = 0; i < depth; ++i) s += close;
  return s;
}

TEST(JsonInput, NestingUpToTheLimitParses) {
  EXPECT_EQ(parse_json(nested("[", "]", kMaxJsonDepth)).dump(), nested("[", "]", kMaxJsonDepth));
  EXPECT_NO_THROW(parse_json(nested("{\"a\":", "}", kMaxJsonDepth)));
  EXPECT_NO_THROW(parse_json<nlohmann::ordered_json>(nested("{\"a\":[", "]}", kMaxJsonDepth / 2)));
}

TEST(JsonInput, OneLevelMoreIsRefusedNamingTheLimitAndTheByte) {
  for (const auto& text : {nested("[", "]", kMaxJsonDepth + 1), nested("{\"a\":", "}", kMaxJsonDepth + 1),
                           nested("{\"k\":[", "]}", kMaxJsonDepth)}) {
    SCOPED_TRACE(text);
    try {
      parse_json(text);
      ADD_FAILURE() << "no exception";
    } catch (const JsonTooDeep& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("deeper than the limit of 64 levels"), std::string::npos) << what;
      EXPECT_NE(what.find("at byte"), std::string::npos) << what;
    }
  }
}

// Every site catches nlohmann::json::exception to report bad JSON with its own context.
TEST(JsonInput, TooDeepIsANlohmannException) {
  EXPECT_THROW(parse_json(nested("[", "]", 1000)), nlohmann::json::exception);
}

TEST(JsonInput, BracketsInsideStringsDoNotCount) {
  const std::string brackets(10 * kMaxJsonDepth, '[');
  EXPECT_NO_THROW(check_json_depth("{\"" + brackets + "\": \"" + brackets + "\"}"));
  // An escaped quote does not end the string; an escaped backslash before the closing quote does.
  EXPECT_NO_THROW(check_json_depth("[\"\\\"" + brackets + "\"]"));
  EXPECT_THROW(check_json_depth("[\"\\\\\"" + brackets + "]"), JsonTooDeep);
}

// The reported crash: 80,000 nested arrays. Refused before parsing, in well under a second.
TEST(JsonInput, VeryDeepInputIsRefusedQuickly) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(parse_json(nested("[", "]", 80000)), JsonTooDeep);
  EXPECT_THROW(parse_json<nlohmann::ordered_json>("{\"schema\": {\"a\": " + nested("[", "]", 80000) + "}}"), JsonTooDeep);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

}  // namespace
}  // namespace rexnlu
