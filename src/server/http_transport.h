// HTTP/1.1 connections over Boost.Asio: one I/O thread reads every connection without blocking
// (a slow client costs a socket, not a thread), with a connection cap, an idle timeout between
// requests and a deadline for each request to arrive; requests are parsed by RequestReader, and
// answered in order (pipelining) with one write per response on TCP_NODELAY sockets. Handlers
// that may block (extraction) run on a thread pool; the others on the I/O thread.
// Why Boost.Beast/Asio and not cpp-httplib: docs/dependencies.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "server/http_request_reader.h"

namespace rexnlu::server {

// The status of a request whose client went away before its answer (nginx's 499): the access
// log and the metrics count it; the client never sees it.
constexpr int kClientClosed = 499;

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string error_type;  // for the access log ("" for success)
};

struct TransportConfig {
  RequestLimits limits;
  size_t max_connections = 512;                    // more are answered 503 and closed
  size_t max_connections_per_ip = 0;               // from one client address; 0 = no such limit
  std::chrono::milliseconds idle_timeout{5000};    // keep-alive: waiting for the next request's first byte
  std::chrono::milliseconds read_timeout{30000};   // from a request's first byte until all of it arrived; past it 408
  std::chrono::milliseconds write_timeout{30000};  // to write one response
  int threads = 64;                                // pool for the handlers that may block
};

// What happened to one request, for metrics and the access log.
struct Exchange {
  std::string method, path;  // empty when the request could not be read
  int status = 0;
  std::string error_type;
  double seconds = 0;        // from the request's first byte to the response written
  size_t bytes_in = 0, bytes_out = 0;  // body bytes
  std::string error_body;    // the response body of a 5xx (an error message, never request text)
};

struct TransportHooks {
  std::function<HttpResponse(const HttpRequest&)> handle;
  std::function<bool(const HttpRequest&)> may_block;  // true: handle() runs on the thread pool
  std::function<void(const Exchange&)> done;          // on the I/O thread, after each response
};

// The JSON error body every error response carries.
HttpResponse error_response(int status, const std::string& message, const std::string& error_type);

class HttpTransport {
 public:
  HttpTransport(TransportConfig config, TransportHooks hooks);
  ~HttpTransport();
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  // Binds and listens (backlog 1024); returns the port. Throws rexnlu::Error (kIo).
  int bind(const std::string& host, int port);
  // Serves until stop(); returns when every connection is closed (requests being read or
  // handled are answered first, with "Connection: close").
  void run();
  // Safe from any thread: stops accepting and closes idle connections.
  void stop();

 private:
  struct Impl;
  struct Connection;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rexnlu::server
