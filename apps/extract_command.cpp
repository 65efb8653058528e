#include "extract_command.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command_util.h"
#include "pretty_print.h"
#include "progress_bar.h"
#include "request_json.h"
#include "resume_output.h"
#include "rexnlu/error.h"
#include "rexnlu/json.h"
#include "rexnlu/tasks.h"

namespace rexnlu::apps {
namespace {

struct ExtractFlags {
  LoadOptions load;
  std::string model;
  std::string text;  // positional: single-text mode
  std::string schema;
  TaskFlags task;
  std::string options_json;
  bool json = false;
  std::string color = "auto";
  std::string input, output;
  bool resume = false;
  int batch_size = 16;
  bool no_progress = false;
  Limits limits;
};

Options base_options(const ExtractFlags& f) {
  if (f.options_json.empty()) return {};
  Json j;
  try {
    j = parse_json_input(f.options_json);
  } catch (const Json::exception& e) {
    throw InputError(std::string("--options is not valid JSON: ") + e.what());
  }
  return options_from_json(j);
}

// ------------------------------------------------------------------ one text
void run_single(const ExtractFlags& f) {
  Options options = base_options(f);
  if (!f.json) options.byte_offsets = false;  // the pretty printer slices by code point
  const Request request = request_from_flags(f.text, f.schema, f.task, options);
  Engine engine = load_engine(f.model, f.load);
  engine.set_limits(f.limits);
  const Result result = engine.extract(request.text, request.schema, request.options);
  for (const auto& w : result.warnings) std::cerr << "warning: " << w << '\n';
  if (f.json) {
    std::cout << result.to_json() << '\n';
    return;
  }
  const bool color = f.color == "always" || (f.color == "auto" && is_terminal(stdout) && !std::getenv("NO_COLOR"));
  std::cout << pretty_result(request.text, result, color);
}

// ------------------------------------------------------------------ JSON lines
struct Pending {
  int64_t line_number = 0;
  Json id;                           // echoed in the output when the line had one
  std::optional<std::string> error;  // the line could not become a request
  Request request;
};

std::string output_line(const Pending& p, const Result* result) {
  const std::optional<std::string> error = p.error ? p.error : (result->ok() ? std::nullopt : std::optional(result->error));
  Json line = Json::object();
  if (error) {
    line["line"] = p.line_number;
    if (!p.id.is_null()) line["id"] = p.id;
    line["error"] = *error;
    return dump_json(line);
  }
  return dump_json(result_line(p.id, *result));
}

class LineWriter {
 public:
  LineWriter(const std::string& path, bool append) {
    if (path.empty() || path == "-") return;
    file_ = std::fopen(path.c_str(), append ? "ab" : "wb");
    if (!file_) throw IoError("cannot open --output " + path + " for writing");
    path_ = path;
  }
  ~LineWriter() {
    if (file_) std::fclose(file_);
  }
  LineWriter(const LineWriter&) = delete;
  LineWriter& operator=(const LineWriter&) = delete;

  // Each line reaches the OS at once: a crash loses nothing already written (--resume relies on it).
  void write(const std::string& line) {
    std::FILE* f = file_ ? file_ : stdout;
    if (std::fwrite(line.data(), 1, line.size(), f) != line.size() || std::fputc('\n', f) == EOF || std::fflush(f) != 0) {
      throw IoError("cannot write to " + (file_ ? path_ : std::string("stdout")));
    }
  }

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
};

Pending parse_pending(const std::string& text, int64_t line_number, const Options& base, const ExtractFlags& f) {
  Pending p;
  p.line_number = line_number;
  try {
    if (text.find_first_not_of(" \t\r") == std::string::npos) throw InputError("empty line");
    Json j = parse_json_input(text);
    if (j.is_object() && j.contains("id")) p.id = j["id"];
    // Command-line --schema / --task serve lines that name neither.
    if (j.is_object() && !j.contains("schema") && !j.contains("task")) {
      if (!f.schema.empty()) j["schema"] = parse_json_input(f.schema);
      if (!f.task.task.empty()) {
        j["task"] = f.task.task;
        if (!f.task.labels.empty()) j["labels"] = f.task.labels;
        if (!f.task.text2.empty()) j["text2"] = f.task.text2;
        if (!f.task.question.empty()) j["question"] = f.task.question;
      }
    }
    p.request = request_from_json(j, base);
  } catch (const Json::exception& e) {
    p.error = std::string("invalid JSON: ") + e.what();
  } catch (const Error& e) {
    p.error = e.what();
  }
  return p;
}

void run_pending(Engine& engine, std::vector<Pending>& pending, LineWriter& out) {
  std::vector<Request> requests;
  std::vector<size_t> index;
  for (size_t i = 0; i < pending.size(); ++i) {
    if (pending[i].error) continue;
    index.push_back(i);
    requests.push_back(std::move(pending[i].request));
  }
  const std::vector<Result> results = engine.extract_batch(requests);
  std::vector<const Result*> by_line(pending.size(), nullptr);
  for (size_t k = 0; k < index.size(); ++k) by_line[index[k]] = &results[k];
  for (size_t i = 0; i < pending.size(); ++i) out.write(output_line(pending[i], by_line[i]));
  pending.clear();
}

void run_lines(const ExtractFlags& f) {
  if (f.batch_size < 1) throw InputError("--batch-size must be >= 1");
  const bool to_file = !f.output.empty() && f.output != "-";
  if (f.resume && !to_file) throw InputError("--resume needs --output FILE (it continues that file)");
  const bool from_file = !f.input.empty() && f.input != "-";
  if (f.resume && !from_file) throw InputError("--resume needs --input FILE (it skips the lines already done)");
  if (from_file && to_file && std::filesystem::exists(f.output) &&
      std::filesystem::equivalent(f.input, f.output)) {
    throw InputError("--input and --output are the same file");
  }
  if (!f.schema.empty()) {
    try {
      parse_json_input(f.schema);
    } catch (const Json::exception& e) {
      throw InputError(std::string("--schema is not valid JSON: ") + e.what());
    }
  }
  const Options base = base_options(f);

  std::ifstream file;
  int64_t bytes_total = 0;
  if (from_file) {
    file.open(f.input, std::ios::binary);
    if (!file) throw IoError("cannot open --input " + f.input);
    bytes_total = static_cast<int64_t>(std::filesystem::file_size(f.input));
  }
  std::istream& in = from_file ? static_cast<std::istream&>(file) : std::cin;

  // --resume: skip as many input lines as the output already has complete lines.
  const int64_t done = f.resume ? keep_complete_lines(f.output) : 0;
  std::string text;
  int64_t line_number = 0, bytes = 0;
  while (line_number < done && std::getline(in, text)) {
    ++line_number;
    bytes += static_cast<int64_t>(text.size()) + 1;
  }
  if (line_number < done) {
    throw InputError("--resume: " + f.output + " has " + std::to_string(done) + " lines but " + f.input + " only " +
                     std::to_string(line_number) + ": not the output of this input?");
  }
  if (f.resume && done > 0) std::cerr << "resuming after line " << done << '\n';

  Engine engine = load_engine(f.model, f.load);
  engine.set_limits(f.limits);
  LineWriter out(f.output, f.resume);
  std::optional<ProgressBar> progress;
  if (!f.no_progress && is_terminal(stderr)) progress.emplace(stderr, bytes_total, bytes);

  std::vector<Pending> pending;
  int64_t lines_this_run = 0;
  auto run_batch = [&] {
    lines_this_run += static_cast<int64_t>(pending.size());
    run_pending(engine, pending, out);
    if (progress) progress->update(lines_this_run, bytes);
  };
  while (std::getline(in, text)) {
    ++line_number;
    bytes += static_cast<int64_t>(text.size()) + 1;
    pending.push_back(parse_pending(text, line_number, base, f));
    if (pending.size() >= static_cast<size_t>(f.batch_size)) run_batch();
  }
  if (in.bad()) throw IoError("error while reading " + (from_file ? f.input : std::string("stdin")));
  if (!pending.empty()) run_batch();
  if (progress) progress->finish();
}

}  // namespace

void add_extract_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("extract",
                                 "Extract / classify one TEXT (readable output; --json for JSON), or JSON lines from "
                                 "--input/stdin (one result line per input line)");
  auto f = std::make_shared<ExtractFlags>();
  cmd->add_option("text", f->text, "the text (omit to read JSON lines from --input or stdin)");
  add_model_option(*cmd, f->model);
  add_load_options(*cmd, f->load);
  cmd->add_option("--schema", f->schema, R"(schema JSON, e.g. '{"人物": null, "组织机构": null}')");
  cmd->add_option("--task", f->task.task, "task preset instead of a schema: " + [] {
    std::string names;
    for (const auto& n : task_names()) names += (names.empty() ? "" : " ") + n;
    return names;
  }());
  cmd->add_option("--labels", f->task.labels, "the task's types / labels (repeat or separate with commas)")
      ->delimiter(',');
  cmd->add_option("--text2", f->task.text2, "second text (nli, matching)");
  cmd->add_option("--question", f->task.question, "question (mrc)");
  cmd->add_option("--options", f->options_json, R"(extraction options JSON, e.g. '{"link_threshold": 0.5}' (docs/options.md))");
  cmd->add_flag("--json", f->json, "TEXT mode: print the engine's JSON instead of the readable view");
  cmd->add_option("--color", f->color, "TEXT mode: highlight spans with ANSI colors")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  cmd->add_option("--input", f->input, "JSON lines {\"id\"?, \"text\", \"schema\" | \"task\"..., \"options\"?} (default: stdin)");
  cmd->add_option("--output", f->output, "where result lines go (default: stdout)");
  cmd->add_flag("--resume", f->resume, "continue an interrupted run: keep --output's complete lines, skip that many input lines, append");
  cmd->add_option("--batch-size", f->batch_size, "lines per engine batch")->capture_default_str()->check(int_range(1, 4096));
  cmd->add_flag("--no-progress", f->no_progress, "no progress bar (it is only shown when stderr is a terminal)");
  add_limit_options(*cmd, f->limits);
  cmd->callback([f] {
    run_command("extract", [&] {
      const bool single = !f->text.empty();
      if (single && (!f->input.empty() || !f->output.empty() || f->resume)) {
        throw InputError("give either a TEXT or --input/--output/--resume, not both");
      }
      if (single) {
        run_single(*f);
      } else {
        run_lines(*f);
      }
    });
  });
}

}  // namespace rexnlu::apps
