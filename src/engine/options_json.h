// The range check of every option (the engine runs it on each request, whatever way the options
// came) and of the limits. options_from_json (include/rexnlu/json.h) is implemented next to them
// in options_json.cpp, with the per-key ranges.
#pragma once

#include "rexnlu/options.h"

namespace rexnlu {

// Every option within its range (docs/options.md); nothing is clamped. Throws rexnlu::Error
// (kInvalidInput) naming the option, its range and the value given.
void check_options(const Options& o);

// Every limit positive (and max_schema_depth at most uie::kMaxSchemaDepth). Throws rexnlu::Error
// (kInvalidInput) naming the limit.
void check_limits(const Limits& l);

}  // namespace rexnlu
