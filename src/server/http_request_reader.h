// Reads HTTP/1.1 requests from the bytes of one connection, with limits: header bytes and
// fields, decoded body bytes (Content-Length and chunked alike), and no content or transfer
// codings the service does not decode. Wraps Boost.Beast's request parser; knows nothing of
// sockets, so the connection code and the fuzz target (fuzz/http_request.cpp) share it.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rexnlu::server {

struct HttpRequest {
  std::string method;   // as sent, e.g. "POST"
  std::string target;   // as sent, e.g. "/v1/extract?x=1"
  std::string path;     // target without the query
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;     // decoded (chunked framing removed)
  bool keep_alive = true;
  // Set by the connection when the client closes or resets it while a handler on the thread pool
  // runs (null for handlers on the I/O thread): the work for it can stop.
  std::shared_ptr<const std::atomic<bool>> client_gone = nullptr;

  // The first field with this name (case-insensitive), or "" when absent.
  std::string header(std::string_view name) const;
};

struct RequestLimits {
  size_t max_body_bytes = 1 << 20;
  size_t max_header_bytes = 16 * 1024;  // request line and all header fields together
  size_t max_header_fields = 100;
};

// Why a request could not be read: the status to answer with, then close the connection.
struct RequestError {
  int status = 400;
  std::string error_type;  // invalid_http, body_too_large, headers_too_large, unsupported_encoding, ...
  std::string message;
  std::string method, path;  // of the request, when its header had been read
};

class RequestReader {
 public:
  enum class State { kNeedMore, kDone, kError };

  explicit RequestReader(RequestLimits limits);
  ~RequestReader();
  RequestReader(const RequestReader&) = delete;
  RequestReader& operator=(const RequestReader&) = delete;

  // Consumes what it can of `data` (the start of the unread bytes of the connection) and returns
  // how many bytes it took; the rest belongs to this request later or to the next one
  // (pipelining). Call again with the remaining bytes plus new ones while state() is kNeedMore.
  size_t feed(std::string_view data);
  State state() const { return state_; }
  // Whether a byte of the current request has arrived (CRLFs between requests do not count): the
  // connection then times the request, and does not close it as idle.
  bool started() const { return started_; }

  // True once, right after the header of a request that sent "Expect: 100-continue" and whose
  // body has not arrived yet: the connection answers "100 Continue".
  bool take_continue();

  const RequestError& error() const { return error_; }
  // The complete request (kDone); the reader then starts on the next one.
  HttpRequest take();

 private:
  struct Parser;
  void fail(int status, std::string error_type, std::string message);
  void check_header();

  RequestLimits limits_;
  std::unique_ptr<Parser> parser_;
  State state_ = State::kNeedMore;
  bool started_ = false;
  bool header_checked_ = false;
  bool continue_pending_ = false;
  RequestError error_;
};

}  // namespace rexnlu::server
