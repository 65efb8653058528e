// A model directory's config.json.
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "models/rex/rex_config.h"
#include "rexnlu/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rexnlu;
  try {
    const models::rex::ModelConfig c = models::rex::parse_model_config(std::string(fuzz::as_text(data, size)), "config.json");
    if (c.num_hidden_layers < 1 || c.hidden_size % c.num_attention_heads != 0) __builtin_trap();
  } catch (const Error&) {
  }
  return 0;
}
