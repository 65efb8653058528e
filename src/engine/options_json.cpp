#include "engine/options_json.h"

#include <algorithm>

#include "rexnlu/error.h"

namespace rexnlu {

Options options_from_json(const nlohmann::ordered_json& j, Options o) {
  if (j.is_null()) return o;
  if (!j.is_object()) throw InputError("options must be a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const auto& v = it.value();
    auto integer = [&]() {
      if (!v.is_number_integer()) throw InputError("option " + k + " must be an integer");
      return v.get<int64_t>();
    };
    auto boolean = [&]() {
      if (!v.is_boolean()) throw InputError("option " + k + " must be true or false");
      return v.get<bool>();
    };
    if (k == "link_threshold") {
      if (!v.is_number()) throw InputError("option link_threshold must be a number");
      o.link_threshold = v.get<float>();
    } else if (k == "max_len") {
      o.max_len = static_cast<int>(std::clamp<int64_t>(integer(), -1, 1 << 20));
    } else if (k == "stride") {
      o.stride = static_cast<int>(std::clamp<int64_t>(integer(), -1, 1 << 20));
    } else if (k == "hint_max_len") {
      o.hint_max_len = static_cast<int>(std::clamp<int64_t>(integer(), -1, 1 << 20));
    } else if (k == "max_batch_cells") {
      o.max_batch_cells = integer();
      if (o.max_batch_cells < 1) throw InputError("option max_batch_cells must be >= 1");
    } else if (k == "dedup") {
      o.dedup = boolean();
    } else if (k == "probabilities") {
      o.probabilities = boolean();
    } else if (k == "byte_offsets") {
      o.byte_offsets = boolean();
    } else {
      throw InputError("unknown option '" + k + "'");
    }
  }
  return o;
}

}  // namespace rexnlu
