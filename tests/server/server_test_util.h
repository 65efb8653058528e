// A real rexnlu HTTP server on 127.0.0.1 at an ephemeral port, in this process, for route tests.
#pragma once

#include <httplib.h>

#include <memory>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "server/http_server.h"

namespace rexnlu::server::testing {

using Json = nlohmann::ordered_json;

std::string tiny_model_dir();

class TestServer {
 public:
  // Loads the bundled tiny model unless load_model is false (then /health stays 503).
  explicit TestServer(ServerConfig config = {}, bool load_model = true);
  ~TestServer();

  httplib::Client client() const;  // a fresh client with a generous read timeout
  HttpServer& server() { return *server_; }
  int port() const { return port_; }

 private:
  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
  std::thread thread_;
};

// Parses a response body, failing the test (empty object) when it is not JSON.
Json body_json(const httplib::Result& r);

}  // namespace rexnlu::server::testing
