// A schema as a request gives it: a JSON object of type names, or a string holding one.
#include <cstdint>

#include "fuzz_util.h"
#include "rexnlu/error.h"
#include "uie/schema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rexnlu;
  try {
    const uie::Schema schema = uie::Schema::parse(fuzz::as_text(data, size));
    // Every legal path is a root-to-leaf walk of the tree the schema built.
    for (const auto& path : schema.legal_paths()) {
      if (path.empty() || static_cast<int>(path.size()) > schema.depth()) __builtin_trap();
    }
  } catch (const Error&) {
  }
  return 0;
}
