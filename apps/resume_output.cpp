#include "resume_output.h"

#include <fstream>
#include <system_error>
#include <vector>

#include "rexnlu/error.h"

namespace rexnlu::apps {

int64_t keep_complete_lines(const std::filesystem::path& output) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(output, ec)) return 0;
  std::ifstream in(output, std::ios::binary);
  if (!in) throw IoError("--resume: cannot read " + output.string());
  // One pass: count newlines and remember where the last one ends.
  std::vector<char> buffer(1 << 16);
  int64_t lines = 0;
  uintmax_t position = 0, complete_bytes = 0;
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto got = static_cast<size_t>(in.gcount());
    for (size_t i = 0; i < got; ++i) {
      if (buffer[i] == '\n') {
        ++lines;
        complete_bytes = position + i + 1;
      }
    }
    position += got;
  }
  if (in.bad()) throw IoError("--resume: error while reading " + output.string());
  in.close();
  if (complete_bytes != position) {
    fs::resize_file(output, complete_bytes, ec);
    if (ec) throw IoError("--resume: cannot truncate the partial last line of " + output.string() + ": " + ec.message());
  }
  return lines;
}

}  // namespace rexnlu::apps
