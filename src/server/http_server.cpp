#include "server/http_server.h"

#include <httplib.h>

#include <fstream>
#include <mutex>
#include <unistd.h>

#include "server/embedded_files.h"
#include "server/extract_request.h"
#include "rexnlu/tasks.h"

namespace rexnlu::server {
namespace {

using Clock = std::chrono::steady_clock;

void send_error(httplib::Response& res, int status, const std::string& message, const std::string& type) {
  res.status = status;
  res.set_content(error_body(message, type), "application/json");
}

void send_json(httplib::Response& res, const Json& body) { res.set_content(dump_json(body), "application/json"); }

// The error_type of a status code that rexnlu's handlers did not answer themselves.
const char* default_error_type(int status) {
  switch (status) {
    case 400: return "invalid_json";
    case 401: return "unauthorized";
    case 404: return "not_found";
    case 405: return "method_not_allowed";
    case 413: return "body_too_large";
    case 422: return "invalid_request";
    case 429: return "queue_full";
    case 503: return "not_ready";
    case 504: return "deadline_exceeded";
    default: return status >= 500 ? "internal" : "bad_request";
  }
}

// Compares without an early exit, so the response time does not tell how much of a key matched.
bool same_secret(std::string_view given, std::string_view key) {
  if (given.size() != key.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ key[i]);
  return diff == 0;
}

int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return pages_resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

// Per handler thread: when the request now being served started (set before routing), so the
// logger that runs after the response can time it.
thread_local Clock::time_point t_started;
thread_local bool t_counted = false;

}  // namespace

struct HttpServer::Impl {
  explicit Impl(ServerConfig c) : config(std::move(c)) {}

  ServerConfig config;
  httplib::Server http;
  int listen_socket = -1;  // the socket bind() made, to raise its backlog
  Metrics metrics;

  std::mutex mutex;  // guards the three below
  std::shared_ptr<Engine> engine;
  std::shared_ptr<Batcher> batcher;
  std::string load_error;

  void install_routes();
  void handle_extract(const httplib::Request& req, httplib::Response& res, bool alias);
  void handle_health(httplib::Response& res);
  void handle_info(httplib::Response& res);
  void send_file(httplib::Response& res, std::string_view name, const char* mime);
  std::shared_ptr<Batcher> current_batcher(std::string& why_not);
};

std::shared_ptr<Batcher> HttpServer::Impl::current_batcher(std::string& why_not) {
  std::lock_guard lock(mutex);
  if (!batcher) why_not = load_error.empty() ? "the model is still loading" : "the model failed to load: " + load_error;
  return batcher;
}

void HttpServer::Impl::send_file(httplib::Response& res, std::string_view name, const char* mime) {
  const std::string_view content = embedded_file(name);
  res.set_content(std::string(content), mime);
}

void HttpServer::Impl::handle_health(httplib::Response& res) {
  std::lock_guard lock(mutex);
  if (batcher) {
    send_json(res, Json{{"status", "ok"}});
    return;
  }
  res.status = 503;
  if (load_error.empty()) {
    send_json(res, Json{{"status", "loading"}, {"error", "the model is still loading"}, {"error_type", "not_ready"}});
  } else {
    send_json(res, Json{{"status", "failed"}, {"error", "the model failed to load: " + load_error}, {"error_type", "not_ready"}});
  }
}

void HttpServer::Impl::handle_info(httplib::Response& res) {
  Json info = {{"name", "rexnlu"}, {"version", REXNLU_VERSION}};
  {
    std::lock_guard lock(mutex);
    Json model = {{"path", config.model_path}, {"loaded", batcher != nullptr}};
    model["load_warnings"] = engine ? Json(engine->load_warnings()) : Json::array();
    if (!load_error.empty()) model["load_error"] = load_error;
    info["model"] = std::move(model);
  }
  info["tasks"] = task_names();
  info["limits"] = {{"max_body_bytes", config.max_body_bytes},
                    {"max_texts", config.max_texts},
                    {"max_queue", config.batcher.max_queue},
                    {"token_budget", config.batcher.token_budget},
                    {"deadline_ms", config.deadline.count()},
                    {"max_text_bytes", config.limits.max_text_bytes},
                    {"max_schema_types", config.limits.max_schema_types},
                    {"max_schema_depth", config.limits.max_schema_depth},
                    {"max_paths", config.limits.max_paths},
                    {"max_output_bytes", config.limits.max_output_bytes},
                    {"max_sequences", config.limits.max_sequences}};
  info["auth_required"] = !config.api_key.empty();
  send_json(res, info);
}

void HttpServer::Impl::handle_extract(const httplib::Request& req, httplib::Response& res, bool alias) {
  std::string why_not;
  const std::shared_ptr<Batcher> b = current_batcher(why_not);
  if (!b) return send_error(res, 503, why_not, "not_ready");

  Json body;
  try {
    body = parse_json_input(req.body);
  } catch (const Json::exception& e) {
    return send_error(res, 400, std::string("malformed JSON: ") + e.what(), "invalid_json");
  }
  ExtractCall call;
  int64_t tokens = 0;
  try {
    call = parse_extract_call(body, alias, config.max_texts);
    std::shared_ptr<Engine> e;
    {
      std::lock_guard lock(mutex);
      e = engine;
    }
    for (size_t i = 0; i < call.requests.size(); ++i) {
      try {
        tokens += e->estimate_cost(call.requests[i]);  // also checks the options and limits
      } catch (const Error& err) {
        const std::string where = call.many ? "texts[" + std::to_string(i) + "]: " : "";
        throw Error(err.kind(), where + err.what());
      }
    }
  } catch (const Error& e) {
    return send_error(res, 422, e.what(), e.kind() == ErrorKind::kLimitExceeded ? "limit_exceeded" : "invalid_request");
  } catch (const Json::exception& e) {  // e.g. a value of the wrong type deep inside
    return send_error(res, 422, e.what(), "invalid_request");
  }

  // A copy goes to the batcher: the response may need the texts (echo_text).
  Batcher::Outcome outcome = b->run(call.requests, tokens, Clock::now() + config.deadline);
  switch (outcome.status) {
    case Batcher::Status::kQueueFull:
      res.set_header("Retry-After", std::to_string(static_cast<int64_t>(outcome.retry_after_seconds)));
      return send_error(res, 429, "the queue is full (" + std::to_string(config.batcher.max_queue) + " texts); retry later",
                        "queue_full");
    case Batcher::Status::kOverloaded:
      res.set_header("Retry-After", std::to_string(static_cast<int64_t>(outcome.retry_after_seconds)));
      return send_error(res, 429, "the work queued ahead would not be done within the deadline of " +
                        std::to_string(config.deadline.count()) + " ms; retry later", "overloaded");
    case Batcher::Status::kDeadline:
      return send_error(res, 504, "not done within the deadline of " + std::to_string(config.deadline.count()) + " ms",
                        "deadline_exceeded");
    case Batcher::Status::kStopped:
      return send_error(res, 503, "the service is shutting down", "shutting_down");
    case Batcher::Status::kOk:
      break;
  }
  for (size_t i = 0; i < outcome.results.size(); ++i) {
    const Result& r = outcome.results[i];
    if (r.ok()) continue;
    const std::string where = call.many ? "texts[" + std::to_string(i) + "]: " : "";
    if (r.error_kind == ErrorKind::kInvalidInput) return send_error(res, 422, where + r.error, "invalid_request");
    if (r.error_kind == ErrorKind::kLimitExceeded) return send_error(res, 422, where + r.error, "limit_exceeded");
    if (r.error_kind == ErrorKind::kCancelled) {  // its deadline passed as the engine checked it
      return send_error(res, 504, "not done within the deadline of " + std::to_string(config.deadline.count()) + " ms",
                        "deadline_exceeded");
    }
    return send_error(res, 500, where + r.error, "internal");
  }
  send_json(res, extract_response(call, outcome.results));
}

void HttpServer::Impl::install_routes() {
  // Handlers answer errors themselves; anything else >= 400 without a body (unknown route,
  // oversized body, ...) gets the same {error, error_type} shape here.
  http.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string message = res.status == 404 ? "no route " + req.method + " " + req.path
                          : res.status == 413 ? "the body is larger than the limit"
                                              : "request failed with status " + std::to_string(res.status);
    send_error(res, res.status, message, default_error_type(res.status));
    return httplib::Server::HandlerResponse::Handled;
  }));
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string message = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      message += std::string(": ") + e.what();
    } catch (...) {
    }
    send_error(res, 500, message, "internal");
  });
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    t_started = Clock::now();
    t_counted = true;
    if (config.api_key.empty() || req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
    const std::string auth = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    if (auth.rfind(prefix, 0) == 0 && same_secret(auth.substr(prefix.size()), config.api_key)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    res.set_header("WWW-Authenticate", "Bearer");
    send_error(res, 401, "missing or wrong API key: send \"Authorization: Bearer <key>\"", "unauthorized");
    return httplib::Server::HandlerResponse::Handled;
  });
  http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    double seconds = 0;
    if (t_counted) {
      seconds = std::chrono::duration<double>(Clock::now() - t_started).count();
      t_counted = false;
    }
    metrics.count_request(route_of(req.path), res.status, seconds);
  });

  // Every route handler counts itself in the in-flight gauge for exactly its own duration.
  auto counted = [this](httplib::Server::Handler handler) {
    return [this, handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
      metrics.in_flight.fetch_add(1);
      struct Leave {
        std::atomic<int64_t>& gauge;
        ~Leave() { gauge.fetch_sub(1); }
      } leave{metrics.in_flight};
      handler(req, res);
    };
  };
  auto get = [&](const char* path, httplib::Server::Handler h) { http.Get(path, counted(std::move(h))); };
  auto post = [&](const char* path, httplib::Server::Handler h) { http.Post(path, counted(std::move(h))); };
  get("/", [this](const httplib::Request&, httplib::Response& res) {
    send_file(res, "index.html", "text/html; charset=utf-8");
  });
  get("/app.js", [this](const httplib::Request&, httplib::Response& res) {
    send_file(res, "app.js", "text/javascript; charset=utf-8");
  });
  get("/style.css", [this](const httplib::Request&, httplib::Response& res) {
    send_file(res, "style.css", "text/css; charset=utf-8");
  });
  get("/health", [this](const httplib::Request&, httplib::Response& res) { handle_health(res); });
  get("/info", [this](const httplib::Request&, httplib::Response& res) { handle_info(res); });
  get("/openapi.json", [this](const httplib::Request&, httplib::Response& res) {
    send_file(res, "openapi.json", "application/json");
  });
  get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    std::string text = metrics.render();
    text += "# HELP process_resident_memory_bytes Resident memory of the service.\n";
    text += "# TYPE process_resident_memory_bytes gauge\n";
    text += "process_resident_memory_bytes " + std::to_string(resident_bytes()) + "\n";
    res.set_content(text, "text/plain; version=0.0.4; charset=utf-8");
  });
  post("/v1/extract", [this](const httplib::Request& req, httplib::Response& res) { handle_extract(req, res, false); });
  post("/extract", [this](const httplib::Request& req, httplib::Response& res) { handle_extract(req, res, true); });

  // A known route with the wrong method is 405, not 404.
  auto wrong_method = [](const char* allowed) {
    return [allowed](const httplib::Request& req, httplib::Response& res) {
      res.set_header("Allow", allowed);
      send_error(res, 405, req.method + " is not allowed on " + req.path + "; use " + allowed, "method_not_allowed");
    };
  };
  for (const char* path : {"/v1/extract", "/extract"}) http.Get(path, wrong_method("POST"));
  for (const char* path : {"/", "/health", "/info", "/metrics", "/openapi.json"}) http.Post(path, wrong_method("GET"));
}

constexpr int kListenBacklog = 1024;

HttpServer::HttpServer(ServerConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {
  const int threads = std::max(1, impl_->config.threads);
  impl_->http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  impl_->http.set_payload_max_length(impl_->config.max_body_bytes);
  impl_->http.set_keep_alive_max_count(10000);
  impl_->http.set_keep_alive_timeout(2);  // also bounds how long an idle connection delays shutdown
  // SO_REUSEADDR only: cpp-httplib's default also sets SO_REUSEPORT, which would let a second
  // server bind the same port and silently share its connections.
  impl_->http.set_socket_options([impl = impl_.get()](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<const void*>(&yes), sizeof yes);
    impl->listen_socket = sock;
  });
  impl_->install_routes();
}

HttpServer::~HttpServer() {
  stop();
  shutdown_batcher();
}

int HttpServer::bind() {
  const ServerConfig& c = impl_->config;
  int port = c.port;
  if (port == 0) {
    port = impl_->http.bind_to_any_port(c.host);
  } else if (!impl_->http.bind_to_port(c.host, port)) {
    port = -1;
  }
  if (port <= 0) throw IoError("cannot listen on " + c.host + ":" + std::to_string(c.port));
  // cpp-httplib listens with a backlog of 5 (compiled into Debian's libcpp-httplib). When many
  // clients connect at once while both cores run a batch, the accept queue overflows, the kernel
  // drops the handshake's last ACK, and those clients' first requests wait for retransmissions
  // (1, 2, 4, 8 s...): latency that no server-side timer sees (docs/benchmarks.md, load test).
  // Calling listen() again on the bound socket raises the backlog (capped by net.core.somaxconn).
  if (impl_->listen_socket >= 0) ::listen(impl_->listen_socket, kListenBacklog);
  return port;
}

void HttpServer::listen() { impl_->http.listen_after_bind(); }

void HttpServer::stop() {
  std::shared_ptr<Batcher> b;
  {
    std::lock_guard lock(impl_->mutex);
    b = impl_->batcher;
  }
  if (b) b->cancel_after(Clock::now() + impl_->config.drain_timeout);
  impl_->http.stop();
}

void HttpServer::set_engine(std::unique_ptr<Engine> engine) {
  engine->set_limits(impl_->config.limits);
  std::shared_ptr<Engine> shared(std::move(engine));
  auto batcher = std::make_shared<Batcher>(
      impl_->config.batcher,
      [shared, hook = impl_->config.before_batch](const std::vector<Request>& requests, BatchTimings& timings,
                                                  const std::function<bool()>& cancelled) {
        if (hook) hook();
        return shared->extract_batch(requests, &timings, cancelled);
      },
      impl_->metrics);
  std::lock_guard lock(impl_->mutex);
  impl_->engine = std::move(shared);
  impl_->batcher = std::move(batcher);
  impl_->metrics.model_loaded.store(1);
}

void HttpServer::set_load_error(const std::string& message) {
  std::lock_guard lock(impl_->mutex);
  impl_->load_error = message;
}

void HttpServer::shutdown_batcher() {
  std::shared_ptr<Batcher> b;
  {
    std::lock_guard lock(impl_->mutex);
    b = impl_->batcher;
  }
  if (b) b->stop();
}

Metrics& HttpServer::metrics() { return impl_->metrics; }

}  // namespace rexnlu::server
