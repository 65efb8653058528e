// The rexnlu HTTP service: routes, authentication, Host/Origin checks, limits, error bodies and
// the access log over HttpTransport, with extraction going through the dynamic Batcher.
// See docs/http_api.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rexnlu/engine.h"
#include "server/batcher.h"
#include "server/metrics.h"

namespace rexnlu::server {

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 8080;                        // 0 = any free port (see HttpServer::bind)
  std::string api_key;                    // non-empty: "Authorization: Bearer <key>" on every route but /health
  size_t max_body_bytes = 1 << 20;        // larger bodies (after chunked decoding) get 413
  size_t max_header_bytes = 16 * 1024;    // request line + header fields; past it 431
  size_t max_header_fields = 100;         // past it 431
  size_t max_connections = 512;           // open connections at most; more get 503 and are closed
  size_t max_connections_per_ip = 0;      // open connections from one client address; 0 = no such limit
  std::chrono::milliseconds idle_timeout{5000};   // keep-alive connection without a request: closed
  std::chrono::milliseconds read_timeout{30000};  // a request must arrive whole within this; past it 408
  int64_t max_texts = 64;                 // "texts" per request
  std::chrono::milliseconds deadline{30000};  // per extract request; past it 504
  int threads = 64;                       // threads for extract requests (concurrent extractions being served)
  // After stop(), work still running or queued this long later is cancelled (503 shutting_down).
  std::chrono::milliseconds drain_timeout{3000};
  // stop() first turns /health to 503 "draining" and keeps accepting and serving this long, so a
  // load balancer takes the instance out before its socket closes (docs/deploy.md). 0: at once.
  std::chrono::milliseconds drain_delay{0};
  Limits limits;                          // per text: size and work bounds (set on the engine); past them 422
  // Without an API key: the Host header must name this machine when bound to loopback (DNS
  // rebinding), and a request with an Origin header must come from the service's own page or
  // one of allowed_origins (cross-site requests). Allowed origins also get CORS headers.
  std::vector<std::string> allowed_hosts;     // extra names accepted in Host, e.g. "nlu.internal"
  std::vector<std::string> allowed_origins;   // e.g. "http://localhost:3000"
  bool access_log = true;                     // one line per request (never the text)
  // Where the access log and error lines go (default: stderr).
  std::function<void(std::string_view)> log;
  // /health answers 503 "wedged" when the batcher has made no progress for this long while it
  // has work (one batch running, or a job waiting that it does not take).
  std::chrono::milliseconds stall_limit{60000};
  BatcherConfig batcher;
  std::string model_path;                 // shown by /info
  // Runs on the batcher thread before each batch. Tests block here to fill the queue or pass a
  // deadline deterministically; unset in the service.
  std::function<void()> before_batch;
};

class HttpServer {
 public:
  explicit HttpServer(ServerConfig config);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket and returns its port. Throws rexnlu::Error (kIo) on failure.
  int bind();
  // Serves until stop(); returns once every request already accepted is answered.
  void listen();
  // Stops accepting connections (safe from any thread); listen() then drains and returns. Work
  // not done within drain_timeout is cancelled between model calls. With a drain_delay, /health
  // answers 503 "draining" at once and stop() waits that long before the socket closes.
  void stop();

  // The model is ready: /health turns 200 and extraction starts.
  void set_engine(std::unique_ptr<Engine> engine);
  // Loading failed: /health and extraction answer 503 with this message.
  void set_load_error(const std::string& message);
  // Stops the batcher after listen() returned (queued work finishes first).
  void shutdown_batcher();

  Metrics& metrics();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rexnlu::server
