// A request's "options" object (docs/options.md).
#include <cstdint>

#include "common/json_input.h"
#include "fuzz_util.h"
#include "rexnlu/error.h"
#include "rexnlu/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rexnlu;
  try {
    options_from_json(parse_json<nlohmann::ordered_json>(fuzz::as_text(data, size)));
  } catch (const nlohmann::json::exception&) {
  } catch (const Error&) {
  }
  return 0;
}
