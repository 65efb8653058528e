#include "request_json.h"

#include "engine/options_json.h"
#include "rexnlu/error.h"
#include "uie/tasks.h"

namespace rexnlu::apps {
namespace {

std::string string_field(const Json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return {};
  if (!j[key].is_string()) throw InputError(std::string("\"") + key + "\" must be a string");
  return j[key].get<std::string>();
}

std::vector<std::string> string_list(const Json& j, const char* key) {
  std::vector<std::string> out;
  if (!j.contains(key) || j[key].is_null()) return out;
  const auto bad = InputError(std::string("\"") + key + "\" must be an array of strings");
  if (!j[key].is_array()) throw bad;
  for (const auto& item : j[key]) {
    if (!item.is_string()) throw bad;
    out.push_back(item.get<std::string>());
  }
  return out;
}

Request from_task(const std::string& text, const TaskFlags& flags, const Options& options) {
  uie::TaskArgs args;
  args.task = flags.task;
  args.text = text;
  args.text2 = flags.text2;
  args.labels = flags.labels;
  args.question = flags.question;
  const uie::TaskRequest t = uie::build_task(args);
  return Request{t.text, t.schema, options};
}

}  // namespace

std::string dump_json(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json result_line(const Json& id, const Result& result) {
  Json line = Json::object();
  if (!id.is_null()) line["id"] = id;
  const Json body = Json::parse(result.to_json());
  for (auto it = body.begin(); it != body.end(); ++it) line[it.key()] = it.value();
  return line;
}

Request request_from_json(const Json& line, const Options& base) {
  if (!line.is_object()) throw InputError("a line must be a JSON object");
  if (!line.contains("text") || !line["text"].is_string()) throw InputError("missing string \"text\"");
  const Options options = line.contains("options") ? options_from_json(line["options"], base) : base;
  const std::string text = line["text"].get<std::string>();
  if (line.contains("task")) {
    const TaskFlags flags{string_field(line, "task"), string_list(line, "labels"), string_field(line, "text2"),
                          string_field(line, "question")};
    Request r = from_task(text, flags, options);
    if (line.contains("schema")) r.schema = dump_json(line["schema"]);  // an explicit schema wins
    return r;
  }
  if (!line.contains("schema")) throw InputError("missing \"schema\" (or \"task\")");
  return Request{text, dump_json(line["schema"]), options};
}

Request request_from_flags(const std::string& text, const std::string& schema, const TaskFlags& task,
                           const Options& options) {
  if (!task.task.empty()) {
    Request r = from_task(text, task, options);
    if (!schema.empty()) r.schema = schema;
    return r;
  }
  if (schema.empty()) throw InputError("give --schema JSON or --task NAME");
  return Request{text, schema, options};
}

}  // namespace rexnlu::apps
