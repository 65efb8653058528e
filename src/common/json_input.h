// Reading JSON that comes from outside (request bodies, JSON lines, --schema/--options, config.json,
// the safetensors header, tokenizer files): nesting is capped BEFORE anything is parsed, so no
// deeply nested input can reach code that recurses over JSON values (dump(), type checks,
// error messages that quote a value) and overflow the stack.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace rexnlu {

// Deepest nesting of arrays and objects accepted in any JSON rexnlu reads (documented in
// docs/options.md). The deepest legitimate input is a request body with an 8-level schema.
inline constexpr int kMaxJsonDepth = 64;

// Thrown by check_json_depth. It is a nlohmann::json::exception, so every place that already
// reports malformed JSON (with the file, line or field it came from) reports this too.
class JsonTooDeep : public nlohmann::json::exception {
 public:
  JsonTooDeep(int max_depth, size_t byte_offset);
};

// Throws JsonTooDeep when `text` opens more than `max_depth` nested arrays/objects (brackets inside
// strings do not count). One pass over the bytes, no allocation; says nothing else about validity.
void check_json_depth(std::string_view text, int max_depth = kMaxJsonDepth);

// check_json_depth, then J::parse. Throws nlohmann::json::exception (parse_error or JsonTooDeep).
template <class J = nlohmann::json>
J parse_json(std::string_view text) {
  check_json_depth(text);
  return J::parse(text);
}

}  // namespace rexnlu
