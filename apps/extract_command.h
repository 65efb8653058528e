// `rexnlu extract`: JSON lines in ({"id"?, "text", "schema" | "task" + arguments, "options"?}),
// one JSON result per line out, in order.
#pragma once

#include <CLI/CLI.hpp>

namespace rexnlu::apps {

void add_extract_command(CLI::App& app);

}  // namespace rexnlu::apps
