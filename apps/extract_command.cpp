#include "extract_command.h"

#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/options_json.h"
#include "rexnlu/default_model.h"
#include "rexnlu/engine.h"
#include "uie/tasks.h"

namespace rexnlu::apps {
namespace {

using Json = nlohmann::ordered_json;

// Lines are run through extract_batch in groups: one model forward per level per group.
constexpr size_t kLinesPerBatch = 16;

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string string_field(const Json& j, const char* key) {
  if (!j.contains(key)) return {};
  if (!j[key].is_string()) throw InputError(std::string("\"") + key + "\" must be a string");
  return j[key].get<std::string>();
}

// One input line -> the request, or throws rexnlu::Error / json errors.
Request parse_line(const std::string& line) {
  const Json j = Json::parse(line);
  if (!j.is_object()) throw InputError("a line must be a JSON object");
  if (!j.contains("text") || !j["text"].is_string()) throw InputError("missing string \"text\"");
  Request r;
  if (j.contains("options")) r.options = options_from_json(j["options"]);
  if (j.contains("task")) {
    uie::TaskArgs args;
    args.task = string_field(j, "task");
    args.text = j["text"].get<std::string>();
    args.text2 = string_field(j, "text2");
    args.question = string_field(j, "question");
    if (j.contains("labels")) {
      if (!j["labels"].is_array()) throw InputError("\"labels\" must be an array of strings");
      for (const auto& l : j["labels"]) {
        if (!l.is_string()) throw InputError("\"labels\" must be an array of strings");
        args.labels.push_back(l.get<std::string>());
      }
    }
    const uie::TaskRequest t = uie::build_task(args);
    r.text = t.text;
    r.schema = j.contains("schema") ? dump(j["schema"]) : t.schema;
    return r;
  }
  if (!j.contains("schema")) throw InputError("missing \"schema\" (or \"task\")");
  r.text = j["text"].get<std::string>();
  r.schema = dump(j["schema"]);
  return r;
}

struct Pending {
  size_t line_number;
  Json id;
  std::optional<std::string> error;
  Request request;
};

void flush(Engine& engine, std::vector<Pending>& pending, std::ostream& out) {
  std::vector<Request> requests;
  std::vector<size_t> index;
  for (size_t i = 0; i < pending.size(); ++i) {
    if (!pending[i].error) {
      index.push_back(i);
      requests.push_back(std::move(pending[i].request));
    }
  }
  std::vector<Result> results = engine.extract_batch(requests);
  std::vector<std::optional<Result>> by_line(pending.size());
  for (size_t k = 0; k < index.size(); ++k) by_line[index[k]] = std::move(results[k]);
  for (size_t i = 0; i < pending.size(); ++i) {
    const Pending& p = pending[i];
    const std::optional<std::string> error = p.error ? p.error : (by_line[i]->ok() ? std::nullopt : std::optional(by_line[i]->error));
    if (error) {
      Json e = {{"line", p.line_number}};
      if (!p.id.is_null()) e["id"] = p.id;
      e["error"] = *error;
      out << dump(e) << '\n';
      continue;
    }
    Json r = Json::parse(by_line[i]->to_json());
    Json line = Json::object();
    if (!p.id.is_null()) line["id"] = p.id;
    for (auto it = r.begin(); it != r.end(); ++it) line[it.key()] = it.value();
    out << dump(line) << '\n';
  }
  out.flush();
  pending.clear();
}

int run_extract(const std::string& model, const std::string& input) {
  Engine engine = Engine::load(model.empty() ? default_model_dir() : std::filesystem::path(model));
  for (const auto& w : engine.load_warnings()) std::cerr << "warning: " << w << '\n';
  std::ifstream file;
  if (!input.empty() && input != "-") {
    file.open(input);
    if (!file) throw IoError("cannot open --input " + input);
  }
  std::istream& in = file.is_open() ? static_cast<std::istream&>(file) : std::cin;
  std::vector<Pending> pending;
  std::string line;
  size_t line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Pending p{line_number, nullptr, std::nullopt, {}};
    try {
      const Json j = Json::parse(line);
      if (j.is_object() && j.contains("id")) p.id = j["id"];
      p.request = parse_line(line);
    } catch (const Json::exception& e) {
      p.error = std::string("invalid JSON: ") + e.what();
    } catch (const Error& e) {
      p.error = e.what();
    }
    pending.push_back(std::move(p));
    if (pending.size() >= kLinesPerBatch) flush(engine, pending, std::cout);
  }
  flush(engine, pending, std::cout);
  return 0;
}

}  // namespace

void add_extract_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("extract", "Schema-guided extraction / classification over JSON lines");
  auto model = std::make_shared<std::string>();
  auto input = std::make_shared<std::string>();
  cmd->add_option("--model", *model, "model directory (default: the bundled model)");
  cmd->add_option("--input", *input, "JSON lines file (default: stdin)");
  cmd->callback([model, input]() {
    try {
      run_extract(*model, *input);
    } catch (const Error& e) {
      std::cerr << "rexnlu extract: " << e.what() << '\n';
      throw CLI::RuntimeError(1);
    }
  });
}

}  // namespace rexnlu::apps
