// libFuzzer target: the HTTP request reader (src/server/http_request_reader.*) on arbitrary
// connection bytes, fed in pieces whose sizes come from the input's first byte (a request split
// across reads), for as many pipelined requests as the bytes hold. Limits are small so that the
// limit paths are reached. Invariants: feed() never takes more than it is given, a finished
// request's body respects the body limit, and an error names a 4xx/5xx status and a type.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "server/http_request_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t piece = 1 + data[0] % 64;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);

  rexnlu::server::RequestLimits limits;
  limits.max_body_bytes = 256;
  limits.max_header_bytes = 1024;
  limits.max_header_fields = 16;
  rexnlu::server::RequestReader reader(limits);
  std::string pending;
  size_t offered = 0;
  for (;;) {
    const size_t used = reader.feed(pending);
    if (used > pending.size()) std::abort();
    pending.erase(0, used);
    reader.take_continue();
    if (reader.state() == rexnlu::server::RequestReader::State::kError) {
      const auto& e = reader.error();
      if (e.status < 400 || e.status > 599 || e.error_type.empty()) std::abort();
      return 0;
    }
    if (reader.state() == rexnlu::server::RequestReader::State::kDone) {
      const rexnlu::server::HttpRequest r = reader.take();
      if (r.body.size() > limits.max_body_bytes || r.path.empty() || r.path[0] != '/') std::abort();
      (void)r.header("content-type");
      continue;  // the next pipelined request may already be pending
    }
    // As a connection does: feed again only with more bytes than before.
    if (offered == bytes.size()) return 0;
    const size_t n = std::min(piece, bytes.size() - offered);
    pending.append(bytes.substr(offered, n));
    offered += n;
  }
}
