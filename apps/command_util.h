// What every rexnlu subcommand shares: the --model option, loading the engine, and turning
// exceptions into a message on stderr plus a non-zero exit code.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>

#include "rexnlu/engine.h"

namespace rexnlu::apps {

// Adds `--model DIR` (default: the bundled model, see default_model_dir()).
void add_model_option(CLI::App& cmd, std::string& model);

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
