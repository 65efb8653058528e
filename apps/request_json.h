// One extraction request written as JSON (a line of `rexnlu extract --input`, of `bench --texts`):
//   {"id"?, "text", "schema" | "task" (+ "labels", "text2", "question"), "options"?}
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rexnlu/engine.h"
#include "rexnlu/json.h"

namespace rexnlu::apps {

using Json = rexnlu::Json;

// A task preset with its arguments (see rexnlu/tasks.h), as given on the command line.
struct TaskFlags {
  std::string task;
  std::vector<std::string> labels;
  std::string text2, question;
};

// Builds the engine request with the shared parser (rexnlu::requests_from_json); "options" are
// applied over `base`. Throws rexnlu::Error (kInvalidInput) naming the offending field; an unknown
// task or missing arguments come from rexnlu::build_task.
Request request_from_json(const Json& line, const Options& base);

// The request for `text` with either a schema (JSON text) or a task preset.
Request request_from_flags(const std::string& text, const std::string& schema, const TaskFlags& task,
                           const Options& options);

// The output line for a successful result: {"id"? (when not null), "output", "warnings"?}.
Json result_line(const Json& id, const Result& result);

}  // namespace rexnlu::apps
