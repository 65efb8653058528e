// `rexnlu eval --data FILE.jsonl`: runs the model over a file in the sample_tasks format
// {"id", "text", "info_list": [[{"type", "span", "offset"}...]...], "schema"} and reports span-level
// P/R/F1 (per type and micro overall) and classification accuracy (see eval_metrics.h, docs/cli.md).
#pragma once

#include <CLI/CLI.hpp>

namespace rexnlu::apps {

void add_eval_command(CLI::App& app);

}  // namespace rexnlu::apps
