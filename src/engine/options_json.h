// Options from a request's JSON "options" object (CLI, HTTP service).
#pragma once

#include <nlohmann/json.hpp>

#include "rexnlu/options.h"

namespace rexnlu {

// Keys: link_threshold, max_len, stride, hint_max_len, dedup, probabilities, byte_offsets,
// max_batch_cells. Unknown keys or wrong types throw rexnlu::Error (kInvalidInput).
Options options_from_json(const nlohmann::ordered_json& j, Options base = {});

}  // namespace rexnlu
