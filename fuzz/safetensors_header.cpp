// A model.safetensors file: the 8-byte header length, the JSON header (dtypes, shapes, offsets)
// and the data section, read as the loader reads a model directory's file.
#include <cstdint>

#include "fuzz_util.h"
#include "io/safetensors.h"
#include "rexnlu/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rexnlu;
  const fuzz::MemFile file(data, size);
  try {
    const io::TensorStore store = io::load_safetensors(file.path());
    for (const std::string& name : store.names()) {
      const TensorView& t = store.at(name);
      if (t.nbytes() > size) __builtin_trap();  // views stay inside the file
    }
  } catch (const Error&) {
  }
  return 0;
}
