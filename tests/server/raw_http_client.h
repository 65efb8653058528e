// A bare HTTP/1.1 client over a blocking socket, for what httplib::Client cannot send or time:
// raw bytes (chunked, pipelined, malformed, slow), and one response at a time with its headers.
#pragma once

#include <chrono>
#include <map>
#include <string>

namespace rexnlu::server::testing {

struct RawResponse {
  int status = 0;  // 0: no complete response (closed or timed out)
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? "" : it->second;
  }
};

class RawClient {
 public:
  // Connects to 127.0.0.1:port, from `source` (another loopback address, e.g. "127.0.0.2") when given.
  explicit RawClient(int port, const std::string& source = "");
  ~RawClient();
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return fd_ >= 0; }
  // Sends all bytes; false when the connection is gone.
  bool send(const std::string& bytes);
  // Reads the next response (Content-Length framing; a 1xx is returned like any other).
  // no_body: the answer to a HEAD request (Content-Length then names a body that is not sent).
  RawResponse read(std::chrono::milliseconds timeout = std::chrono::milliseconds(10000), bool no_body = false);
  // True when the server closed the connection (EOF or reset) within the timeout.
  bool closed_by_server(std::chrono::milliseconds timeout);

 private:
  int fd_ = -1;
  std::string buffer_;
};

// "POST <path>" with a JSON body and Content-Length, keep-alive.
std::string post_request(const std::string& path, const std::string& body,
                         const std::string& extra_headers = "", const std::string& content_type = "application/json");

}  // namespace rexnlu::server::testing
