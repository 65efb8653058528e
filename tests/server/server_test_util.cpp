#include "server/server_test_util.h"

#include <gtest/gtest.h>

namespace rexnlu::server::testing {

std::string tiny_model_dir() { return std::string(REXNLU_MODELS_DIR) + "/rexuninlu_tiny"; }

TestServer::TestServer(ServerConfig config, bool load_model) {
  config.host = "127.0.0.1";
  config.port = 0;
  if (config.model_path.empty()) config.model_path = tiny_model_dir();
  if (!config.log) config.log = [](std::string_view) {};  // tests that read the log pass their own
  server_ = std::make_unique<HttpServer>(config);
  if (load_model) server_->set_engine(std::make_unique<Engine>(Engine::load(config.model_path)));
  port_ = server_->bind();
  thread_ = std::thread([this] { server_->listen(); });
}

TestServer::~TestServer() {
  server_->stop();
  thread_.join();
  server_->shutdown_batcher();
}

httplib::Client TestServer::client() const {
  httplib::Client c("127.0.0.1", port_);
  c.set_read_timeout(60, 0);
  return c;
}

Json body_json(const httplib::Result& r) {
  if (!r) {
    ADD_FAILURE() << "no response: " << httplib::to_string(r.error());
    return Json::object();
  }
  try {
    return Json::parse(r->body);
  } catch (const Json::exception& e) {
    ADD_FAILURE() << "not JSON (" << e.what() << "): " << r->body.substr(0, 200);
    return Json::object();
  }
}

}  // namespace rexnlu::server::testing
