// `rexnlu extract`:
//   rexnlu extract TEXT --schema JSON | --task NAME [...]   one text: readable output (--json: JSON)
//   rexnlu extract [--input FILE] [--output FILE] [--resume] JSON lines in, one result line per
//   input line out, in order ({"line": N, "error": ...} for a bad line).
#pragma once

#include <CLI/CLI.hpp>

namespace rexnlu::apps {

void add_extract_command(CLI::App& app);

}  // namespace rexnlu::apps
