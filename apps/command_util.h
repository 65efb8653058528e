// What every rexnlu subcommand shares: the --model option, loading the engine, and turning
// exceptions into a message on stderr plus a non-zero exit code.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>

#include "rexnlu/engine.h"

namespace rexnlu::apps {

// Adds `--model DIR` (default: the bundled model, see default_model_dir()).
void add_model_option(CLI::App& cmd, std::string& model);

// Adds --max-text-bytes, --max-schema-types, --max-schema-depth, --max-paths, --max-output-bytes,
// --max-sequences: the per-text limits of rexnlu::Limits (docs/options.md), defaults shown.
void add_limit_options(CLI::App& cmd, Limits& limits);

// A check for a numeric flag: a whole number from `lo` to `hi`. Anything else is refused before it
// is converted (no wrap-around, no negative sizes), and the error names the flag and the value
// given: "--port: 83536 is out of range: give a whole number from 0 to 65535".
CLI::Validator int_range(int64_t lo, int64_t hi);

// Adds --device cpu|cuda, --precision fp32|fp16|bf16|int8 and --threads N (Engine::load's
// LoadOptions; a combination this build cannot run is refused at load with a clear message).
// `serve` names the last one --compute-threads (its --threads are the HTTP handler threads).
void add_load_options(CLI::App& cmd, LoadOptions& options, const std::string& threads_flag = "--threads");

// `model` or, when empty, the bundled default model directory.
std::filesystem::path resolve_model_dir(const std::string& model);

// Engine::load, with the load warnings printed to stderr.
Engine load_engine(const std::string& model, const LoadOptions& options);

// Runs `body`; a rexnlu::Error or any other exception is printed as "rexnlu <command>: <what>" on
// stderr and becomes exit code 1 (CLI::RuntimeError). Returns normally on success.
void run_command(const std::string& command, const std::function<void()>& body);

bool is_terminal(std::FILE* stream);

}  // namespace rexnlu::apps
