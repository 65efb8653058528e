// The JSON side of the public API (include/rexnlu/json.h): options, request objects, results.
#include "rexnlu/json.h"

#include <set>

#include "common/json_input.h"
#include "rexnlu/error.h"
#include "rexnlu/tasks.h"

namespace rexnlu {

Json parse_json_input(std::string_view text) { return parse_json<Json>(text); }

// options_from_json (with the per-option ranges) is in options_json.cpp, next to check_options.

namespace {

std::string string_field(const Json& body, const char* key) {
  const Json& v = body.at(key);
  if (!v.is_string()) throw InputError(std::string("\"") + key + "\" must be a string");
  return v.get<std::string>();
}

std::string optional_string(const Json& body, const char* key) {
  return body.contains(key) && !body[key].is_null() ? string_field(body, key) : std::string();
}

std::vector<std::string> texts_of(const Json& body, const JsonRequestRules& rules) {
  const bool has_text = body.contains("text"), has_texts = rules.allow_texts && body.contains("texts");
  if (!rules.allow_texts && !has_text) throw InputError("missing string \"text\"");
  if (has_text == has_texts) throw InputError("give exactly one of \"text\" (a string) and \"texts\" (an array of strings)");
  if (has_text) return {string_field(body, "text")};
  const Json& texts = body["texts"];
  if (!texts.is_array() || texts.empty()) throw InputError("\"texts\" must be a non-empty array of strings");
  if (static_cast<int64_t>(texts.size()) > rules.max_texts) {
    throw InputError("\"texts\" holds " + std::to_string(texts.size()) + " texts; at most " +
                     std::to_string(rules.max_texts) + " per request");
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < texts.size(); ++i) {
    if (!texts[i].is_string()) throw InputError("texts[" + std::to_string(i) + "] must be a string");
    out.push_back(texts[i].get<std::string>());
  }
  return out;
}

// The schema as the engine takes it: an object, or a string holding one (the original's form).
std::string schema_of(const Json& schema) {
  if (!schema.is_object() && !schema.is_string()) throw InputError("\"schema\" must be a JSON object (or a string holding one)");
  return schema.is_string() ? schema.get<std::string>() : dump_json(schema);
}

void check_keys(const Json& body, const std::set<std::string>& allowed) {
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (!allowed.count(it.key())) throw InputError("unknown field \"" + it.key() + "\"");
  }
}

}  // namespace

std::string dump_json(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

JsonRequests requests_from_json(const Json& body, const JsonRequestRules& rules) {
  if (!body.is_object()) throw InputError("the body must be a JSON object");
  if (rules.strict_keys) {
    std::set<std::string> allowed = {"text", "schema", "task", "labels", "text2", "question", "options"};
    if (rules.allow_texts) allowed.insert("texts");
    check_keys(body, allowed);
  }
  JsonRequests call;
  call.many = rules.allow_texts && body.contains("texts");
  const std::vector<std::string> texts = texts_of(body, rules);
  const Options options = body.contains("options") ? options_from_json(body["options"], rules.base) : rules.base;

  if (!body.contains("task")) {
    if (!body.contains("schema")) throw InputError("missing \"schema\" (or \"task\")");
    const std::string schema = schema_of(body["schema"]);
    for (const std::string& text : texts) call.requests.push_back(Request{text, schema, options});
    return call;
  }

  TaskArgs args;
  args.task = string_field(body, "task");
  args.text2 = optional_string(body, "text2");
  args.question = optional_string(body, "question");
  if (body.contains("labels") && !body["labels"].is_null()) {
    const Json& labels = body["labels"];
    if (!labels.is_array()) throw InputError("\"labels\" must be an array of strings");
    for (const Json& l : labels) {
      if (!l.is_string()) throw InputError("\"labels\" must be an array of strings");
      args.labels.push_back(l.get<std::string>());
    }
  }
  for (const std::string& text : texts) {
    args.text = text;
    const TaskRequest t = build_task(args);
    // An explicit schema overrides the task's (the task then only shapes the text).
    const std::string schema = body.contains("schema") ? schema_of(body["schema"]) : t.schema;
    call.echo_text = call.echo_text || t.text != text;
    call.requests.push_back(Request{t.text, schema, options});
  }
  return call;
}

}  // namespace rexnlu
