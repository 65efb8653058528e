// `rexnlu info [--model DIR]`: what a model directory holds (architecture, sizes, vocabulary,
// checkpoint file and format) and whether it loads, without running it.
#pragma once

#include <CLI/CLI.hpp>

namespace rexnlu::apps {

void add_info_command(CLI::App& app);

}  // namespace rexnlu::apps
