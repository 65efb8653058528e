#include "request_json.h"

#include "rexnlu/error.h"
#include "rexnlu/tasks.h"

namespace rexnlu::apps {
namespace {

Request from_task(const std::string& text, const TaskFlags& flags, const Options& options) {
  TaskArgs args;
  args.task = flags.task;
  args.text = text;
  args.text2 = flags.text2;
  args.labels = flags.labels;
  args.question = flags.question;
  const TaskRequest t = build_task(args);
  return Request{t.text, t.schema, options};
}

}  // namespace

Json result_line(const Json& id, const Result& result) {
  Json line = Json::object();
  if (!id.is_null()) line["id"] = id;
  const Json body = result_json(result);
  for (auto it = body.begin(); it != body.end(); ++it) line[it.key()] = it.value();
  return line;
}

Request request_from_json(const Json& line, const Options& base) {
  if (!line.is_object()) throw InputError("a line must be a JSON object");
  JsonRequestRules rules;  // the parser the HTTP service shares (include/rexnlu/json.h); "id" etc. are ignored
  rules.base = base;
  return std::move(requests_from_json(line, rules).requests.at(0));
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
