#include "server/extract_request.h"

#include <set>

namespace rexnlu::server {
namespace {

void check_keys(const Json& body, const std::set<std::string>& allowed) {
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (!allowed.count(it.key())) throw InputError("unknown field \"" + it.key() + "\"");
  }
}

}  // namespace

std::string error_body(const std::string& message, const std::string& type) {
  return dump_json(Json{{"error", message}, {"error_type", type}});
}

ExtractCall parse_extract_call(const Json& body, bool alias, int64_t max_texts) {
  if (!body.is_object()) throw InputError("the body must be a JSON object");
  if (alias) {
    check_keys(body, {"text", "schema"});
    if (!body.contains("text") || !body.contains("schema")) throw InputError("/extract takes {\"text\", \"schema\"}");
  }
  JsonRequestRules rules;  // the parser the CLI shares (include/rexnlu/json.h)
  rules.allow_texts = !alias;
  rules.max_texts = max_texts;
  rules.strict_keys = true;
  return requests_from_json(body, rules);
}

Json extract_response(const ExtractCall& call, const std::vector<Result>& results) {
  Json items = Json::array();
  for (size_t i = 0; i < results.size(); ++i) {
    Json item = result_json(results[i]);
    if (call.echo_text) item["text"] = call.requests[i].text;
    items.push_back(std::move(item));
  }
  if (call.many) return Json{{"results", std::move(items)}};
  return std::move(items[0]);
}

}  // namespace rexnlu::server
