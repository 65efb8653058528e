// `rexnlu serve`: the HTTP service (src/server, docs/http_api.md).
#pragma once

#include <CLI/CLI.hpp>

namespace rexnlu::apps {

void add_serve_command(CLI::App& app);

}  // namespace rexnlu::apps
