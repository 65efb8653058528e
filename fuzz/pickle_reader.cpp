// The pickle of a torch.save state dict (data.pkl), run by the strict reader that executes nothing.
#include <cstdint>

#include "fuzz_util.h"
#include "io/pickle_reader.h"
#include "rexnlu/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rexnlu;
  try {
    io::PickleReader reader("fuzz.pkl");
    uint64_t consumed = 0;
    reader.read(fuzz::as_bytes(data, size), &consumed);
    if (consumed > size) __builtin_trap();
  } catch (const Error&) {
  }
  return 0;
}
