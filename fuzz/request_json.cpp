// A request body / JSON line as the HTTP service (POST /v1/extract and /extract) and the CLI
// (extract --input lines) read it: bounded parse, request fields, task presets, options, the
// schema parsed as the engine will, and the re-serialization that once overflowed the stack.
#include <cstdint>

#include "common/json_input.h"
#include "fuzz_util.h"
#include "request_json.h"
#include "rexnlu/error.h"
#include "server/extract_request.h"
#include "uie/schema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rexnlu;
  nlohmann::ordered_json body;
  try {
    body = parse_json<nlohmann::ordered_json>(fuzz::as_text(data, size));
  } catch (const nlohmann::json::exception&) {
    return 0;
  }
  std::vector<Request> requests;
  for (const bool alias : {false, true}) {
    try {
      for (Request& r : server::parse_extract_call(body, alias, 64).requests) requests.push_back(std::move(r));
    } catch (const Error&) {
    }
  }
  try {
    requests.push_back(apps::request_from_json(body, Options{}));
  } catch (const Error&) {
  }
  for (const Request& r : requests) {
    try {
      uie::Schema::parse(r.schema);
    } catch (const Error&) {
    }
  }
  (void)dump_json(body);
  return 0;
}
