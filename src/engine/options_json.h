// Options from a request's JSON "options" object (CLI, HTTP service), and the range check of every
// option (the engine runs it on each request, whatever way the options came).
#pragma once

#include <nlohmann/json.hpp>

#include "rexnlu/options.h"

namespace rexnlu {

// Keys: link_threshold, max_len, stride, hint_max_len, dedup, probabilities, byte_offsets,
// max_batch_cells. Unknown keys, wrong types or a value outside its own range throw rexnlu::Error
// (kInvalidInput) naming the option and the value. The ranges that depend on other options
// (hint_max_len, stride vs max_len) are left to check_options, which the engine runs on every request.
Options options_from_json(const nlohmann::ordered_json& j, Options base = {});

// Every option within its range (docs/options.md); nothing is clamped. Throws rexnlu::Error
// (kInvalidInput) naming the option, its range and the value given.
void check_options(const Options& o);

// Every limit positive (and max_schema_depth at most uie::kMaxSchemaDepth). Throws rexnlu::Error
// (kInvalidInput) naming the limit.
void check_limits(const Limits& l);

}  // namespace rexnlu
