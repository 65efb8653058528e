// The rexnlu HTTP service: routes, authentication, limits and error bodies over cpp-httplib,
// with extraction going through the dynamic Batcher. See docs/http_api.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rexnlu/engine.h"
#include "server/batcher.h"
#include "server/metrics.h"

namespace rexnlu::server {

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 8080;                        // 0 = any free port (see HttpServer::bind)
  std::string api_key;                    // non-empty: "Authorization: Bearer <key>" on every route but /health
  size_t max_body_bytes = 1 << 20;        // larger bodies get 413
  int64_t max_texts = 64;                 // "texts" per request
  std::chrono::milliseconds deadline{30000};  // per extract request; past it 504
  int threads = 64;                       // HTTP handler threads (concurrent requests being served)
  // After stop(), work still running or queued this long later is cancelled (503 shutting_down).
  std::chrono::milliseconds drain_timeout{3000};
  Limits limits;                          // per text: size and work bounds (set on the engine); past them 422
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
  // not done within drain_timeout is cancelled between model calls.
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
