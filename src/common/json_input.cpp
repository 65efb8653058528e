#include "common/json_input.h"

namespace rexnlu {

JsonTooDeep::JsonTooDeep(int max_depth, size_t byte_offset)
    : nlohmann::json::exception(
          0, ("JSON nested deeper than the limit of " + std::to_string(max_depth) + " levels of arrays/objects (at byte " +
              std::to_string(byte_offset) + ")")
                 .c_str()) {}

void check_json_depth(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) throw JsonTooDeep(max_depth, i);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

}  // namespace rexnlu
