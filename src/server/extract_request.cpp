#include "server/extract_request.h"

#include <set>

#include "engine/options_json.h"
#include "uie/tasks.h"

namespace rexnlu::server {
namespace {

std::string string_field(const Json& body, const char* key) {
  const Json& v = body.at(key);
  if (!v.is_string()) throw InputError(std::string("\"") + key + "\" must be a string");
  return v.get<std::string>();
}

std::string optional_string(const Json& body, const char* key) {
  return body.contains(key) ? string_field(body, key) : std::string();
}

std::vector<std::string> texts_of(const Json& body, int64_t max_texts) {
  const bool has_text = body.contains("text"), has_texts = body.contains("texts");
  if (has_text == has_texts) throw InputError("give exactly one of \"text\" (a string) and \"texts\" (an array of strings)");
  if (has_text) return {string_field(body, "text")};
  const Json& texts = body["texts"];
  if (!texts.is_array() || texts.empty()) throw InputError("\"texts\" must be a non-empty array of strings");
  if (static_cast<int64_t>(texts.size()) > max_texts) {
    throw InputError("\"texts\" holds " + std::to_string(texts.size()) + " texts; at most " +
                     std::to_string(max_texts) + " per request");
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

std::string error_body(const std::string& message, const std::string& type) {
  return dump_json(Json{{"error", message}, {"error_type", type}});
}

ExtractCall parse_extract_call(const Json& body, bool alias, int64_t max_texts) {
  if (!body.is_object()) throw InputError("the body must be a JSON object");
  if (alias) {
    check_keys(body, {"text", "schema"});
    if (!body.contains("text") || !body.contains("schema")) throw InputError("/extract takes {\"text\", \"schema\"}");
  } else {
    check_keys(body, {"text", "texts", "schema", "task", "labels", "text2", "question", "options"});
  }
  ExtractCall call;
  call.many = body.contains("texts");
  const std::vector<std::string> texts = texts_of(body, max_texts);
  const Options options = body.contains("options") ? options_from_json(body["options"]) : Options{};

  if (!body.contains("task")) {
    if (!body.contains("schema")) throw InputError("missing \"schema\" (or \"task\")");
    const std::string schema = schema_of(body["schema"]);
    for (const std::string& text : texts) call.requests.push_back(Request{text, schema, options});
    return call;
  }

  uie::TaskArgs args;
  args.task = string_field(body, "task");
  args.text2 = optional_string(body, "text2");
  args.question = optional_string(body, "question");
  if (body.contains("labels")) {
    const Json& labels = body["labels"];
    if (!labels.is_array()) throw InputError("\"labels\" must be an array of strings");
    for (const Json& l : labels) {
      if (!l.is_string()) throw InputError("\"labels\" must be an array of strings");
      args.labels.push_back(l.get<std::string>());
    }
  }
  for (const std::string& text : texts) {
    args.text = text;
    const uie::TaskRequest t = uie::build_task(args);
    // An explicit schema overrides the task's (the task then only shapes the text).
    const std::string schema = body.contains("schema") ? schema_of(body["schema"]) : t.schema;
    call.echo_text = call.echo_text || t.text != text;
    call.requests.push_back(Request{t.text, schema, options});
  }
  return call;
}

Json extract_response(const ExtractCall& call, const std::vector<Result>& results) {
  Json items = Json::array();
  for (size_t i = 0; i < results.size(); ++i) {
    Json item = Json::parse(results[i].to_json());
    if (call.echo_text) item["text"] = call.requests[i].text;
    items.push_back(std::move(item));
  }
  if (call.many) return Json{{"results", std::move(items)}};
  return std::move(items[0]);
}

}  // namespace rexnlu::server
