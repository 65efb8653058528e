// `rexnlu bench`: end-to-end extraction throughput and latency (p50/p95) over a fixed set of
// texts (or --texts FILE), and text tokens per second.
#pragma once

#include <CLI/CLI.hpp>

namespace rexnlu::apps {

void add_bench_command(CLI::App& app);

}  // namespace rexnlu::apps
