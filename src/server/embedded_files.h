// Files compiled into the binary at build time (embed_files.cmake): the web page of `/` and the
// OpenAPI document, so the service needs no files next to it.
#pragma once

#include <string_view>
#include <vector>

namespace rexnlu::server {

struct EmbeddedFile {
  std::string_view name;     // file name without folder, e.g. "index.html"
  std::string_view content;
};

const std::vector<EmbeddedFile>& embedded_files();

// The content of the embedded file `name`; empty when there is none.
inline std::string_view embedded_file(std::string_view name) {
  for (const EmbeddedFile& f : embedded_files()) {
    if (f.name == name) return f.content;
  }
  return {};
}

}  // namespace rexnlu::server
