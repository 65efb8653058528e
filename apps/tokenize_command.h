// `rexnlu tokenize`: JSON lines in, token ids / offsets / type ids out (for parity checks and
// for feeding other tools).
#pragma once

#include <CLI/CLI.hpp>

namespace rexnlu::apps {

void add_tokenize_command(CLI::App& app);

}  // namespace rexnlu::apps
