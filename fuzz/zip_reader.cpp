// The zip container of a torch.save checkpoint (pytorch_model.bin): central directory, zip64
// records, local headers, every entry read (with its CRC check).
#include <cstdint>

#include "fuzz_util.h"
#include "io/zip_reader.h"
#include "rexnlu/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rexnlu;
  const auto bytes = fuzz::as_bytes(data, size);
  try {
    const io::ZipReader zip(bytes, "fuzz.zip");
    for (const std::string& name : zip.entry_names()) {
      const auto entry = zip.read(name);
      if (entry.data() < bytes.data() || entry.data() + entry.size() > bytes.data() + bytes.size()) __builtin_trap();
    }
  } catch (const Error&) {
  }
  return 0;
}
