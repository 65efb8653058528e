#include "server/http_server.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <thread>
#include <unistd.h>

#include "server/embedded_files.h"
#include "server/extract_request.h"
#include "rexnlu/gpu_memory.h"
#include "rexnlu/tasks.h"
#include "server/http_transport.h"

namespace rexnlu::server {
namespace {

using Clock = std::chrono::steady_clock;

HttpResponse json_response(const Json& body, int status = 200) {
  HttpResponse r;
  r.status = status;
  r.body = dump_json(body);
  return r;
}

// Compares without an early exit, so the response time does not tell how much of a key matched.
bool same_secret(std::string_view given, std::string_view key) {
  if (given.size() != key.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ key[i]);
  return diff == 0;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return pages_resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

// The name in a Host header, without the port ("[::1]:8080" -> "::1").
std::string host_name(std::string_view host) {
  if (!host.empty() && host.front() == '[') {
    const size_t end = host.find(']');
    return lower(host.substr(1, end == std::string_view::npos ? std::string_view::npos : end - 1));
  }
  const size_t colon = host.find(':');
  if (colon != std::string_view::npos && host.find(':', colon + 1) == std::string_view::npos) host = host.substr(0, colon);
  return lower(host);
}

bool is_loopback_name(const std::string& name) {
  return name == "localhost" || name == "::1" || name.rfind("127.", 0) == 0 || name.ends_with(".localhost");
}

struct RouteSpec {
  std::string_view path;
  std::string_view method;  // the one method it takes ("GET" routes also answer HEAD)
};
constexpr RouteSpec kRoutes[] = {
    {"/", "GET"},       {"/app.js", "GET"},       {"/style.css", "GET"},      {"/health", "GET"},   {"/info", "GET"},
    {"/metrics", "GET"}, {"/openapi.json", "GET"}, {"/v1/extract", "POST"}, {"/extract", "POST"},
};

const RouteSpec* find_route(std::string_view path) {
  for (const RouteSpec& r : kRoutes) {
    if (r.path == path) return &r;
  }
  return nullptr;
}

std::string allow_of(const RouteSpec& r) { return r.method == "GET" ? "GET, HEAD" : std::string(r.method); }

}  // namespace

struct HttpServer::Impl {
  explicit Impl(ServerConfig c);

  ServerConfig config;
  bool check_host = false;    // bound to loopback without an API key
  bool check_origin = false;  // no API key
  Metrics metrics;
  std::unique_ptr<HttpTransport> transport;

  std::atomic<bool> draining{false};  // stop() was called: /health answers 503

  std::mutex mutex;  // guards the three below
  std::shared_ptr<Engine> engine;
  std::shared_ptr<Batcher> batcher;
  std::string load_error;

  HttpResponse handle(const HttpRequest& req);
  HttpResponse route(const HttpRequest& req, const RouteSpec& r);
  HttpResponse handle_extract(const HttpRequest& req, bool alias);
  HttpResponse handle_health();
  HttpResponse handle_info();
  HttpResponse handle_metrics();
  std::shared_ptr<Batcher> current_batcher(std::string& why_not);
  bool origin_allowed(const std::string& origin) const;
  void log_exchange(const Exchange& e);
  void write_log(const std::string& line);
};

HttpServer::Impl::Impl(ServerConfig c) : config(std::move(c)) {
  if (!config.log) {
    config.log = [](std::string_view line) {
      std::string text = std::string(line) + "\n";
      std::fwrite(text.data(), 1, text.size(), stderr);  // one write: lines of threads do not interleave
    };
  }
  check_origin = config.api_key.empty();
  check_host = check_origin && is_loopback_name(host_name(config.host));
  for (std::string& h : config.allowed_hosts) h = host_name(h);
  for (std::string& o : config.allowed_origins) {
    while (!o.empty() && o.back() == '/') o.pop_back();
    o = lower(o);
  }

  TransportConfig t;
  t.limits.max_body_bytes = config.max_body_bytes;
  t.limits.max_header_bytes = config.max_header_bytes;
  t.limits.max_header_fields = config.max_header_fields;
  t.max_connections = config.max_connections;
  t.max_connections_per_ip = config.max_connections_per_ip;
  t.idle_timeout = config.idle_timeout;
  t.read_timeout = config.read_timeout;
  t.threads = config.threads;
  TransportHooks hooks;
  hooks.handle = [this](const HttpRequest& req) { return handle(req); };
  hooks.may_block = [](const HttpRequest& req) { return req.path == "/v1/extract" || req.path == "/extract"; };
  hooks.done = [this](const Exchange& e) { log_exchange(e); };
  transport = std::make_unique<HttpTransport>(t, std::move(hooks));
}

void HttpServer::Impl::write_log(const std::string& line) { config.log(line); }

// One line per request: what, how it ended, how long, how big; never a body. A 500 or 504 also
// leaves its error message, with the access log off too.
void HttpServer::Impl::log_exchange(const Exchange& e) {
  const Route route = e.path.empty() ? Route::kOther : route_of(e.path);
  metrics.count_request(route, e.status, e.seconds);
  if (config.access_log) {
    char line[512];
    std::snprintf(line, sizeof line, "rexnlu serve: access: %s %s %d %.1fms in=%zu out=%zu%s%s",
                  e.method.empty() ? "-" : e.method.c_str(), route_label(route), e.status, e.seconds * 1000,
                  e.bytes_in, e.bytes_out, e.error_type.empty() ? "" : " error=", e.error_type.c_str());
    write_log(line);
  }
  if (e.status >= 500 && e.status != 503) {  // 503: loading, stopping, too many connections: states, not faults
    std::string message = e.error_body;
    try {
      message = Json::parse(e.error_body).value("error", e.error_body);
    } catch (const Json::exception&) {
    }
    write_log("rexnlu serve: error: " + std::to_string(e.status) + " on " + (e.method.empty() ? "-" : e.method) + " " +
              route_label(route) + ": " + message);
  }
}

bool HttpServer::Impl::origin_allowed(const std::string& origin) const {
  const std::string o = lower(origin);
  return std::find(config.allowed_origins.begin(), config.allowed_origins.end(), o) != config.allowed_origins.end();
}

std::shared_ptr<Batcher> HttpServer::Impl::current_batcher(std::string& why_not) {
  std::lock_guard lock(mutex);
  if (!batcher) why_not = load_error.empty() ? "the model is still loading" : "the model failed to load: " + load_error;
  return batcher;
}

HttpResponse HttpServer::Impl::handle(const HttpRequest& req) {
  // Browsers: DNS rebinding (a foreign name resolving to 127.0.0.1) and cross-site requests.
  const std::string host = req.header("Host");
  if (check_host && !host.empty()) {
    const std::string name = host_name(host);
    if (!is_loopback_name(name) && name != host_name(config.host) &&
        std::find(config.allowed_hosts.begin(), config.allowed_hosts.end(), name) == config.allowed_hosts.end()) {
      return error_response(403, "Host \"" + host + "\" is not this service's name (allow it with --allow-host)",
                            "forbidden_host");
    }
  }
  const std::string origin = req.header("Origin");
  const bool same_origin = !origin.empty() && !host.empty() &&
                           (lower(origin) == "http://" + lower(host) || lower(origin) == "https://" + lower(host));
  const bool cors = !origin.empty() && !same_origin && origin_allowed(origin);
  if (check_origin && !origin.empty() && !same_origin && !cors) {
    return error_response(403, "Origin \"" + origin + "\" may not call this service (allow it with --allow-origin)",
                          "forbidden_origin");
  }

  HttpResponse res;
  const RouteSpec* r = find_route(req.path);
  if (cors && r && req.method == "OPTIONS") {  // CORS preflight of an allowed origin
    res.status = 204;
    res.headers = {{"Access-Control-Allow-Methods", std::string(r->method)},
                   {"Access-Control-Allow-Headers", "Content-Type, Authorization"},
                   {"Access-Control-Max-Age", "600"}};
  } else if (!config.api_key.empty() && req.path != "/health" &&
             !(req.header("Authorization").rfind("Bearer ", 0) == 0 &&
               same_secret(std::string_view(req.header("Authorization")).substr(7), config.api_key))) {
    res = error_response(401, "missing or wrong API key: send \"Authorization: Bearer <key>\"", "unauthorized");
    res.headers.emplace_back("WWW-Authenticate", "Bearer");
  } else if (!r) {
    res = error_response(404, "no route " + req.method + " " + req.path, "not_found");
  } else if (req.method != r->method && !(r->method == "GET" && req.method == "HEAD")) {
    res = error_response(405, req.method + " is not allowed on " + req.path + "; use " + allow_of(*r), "method_not_allowed");
    res.headers.emplace_back("Allow", allow_of(*r));
  } else {
    metrics.in_flight.fetch_add(1);
    struct Leave {
      std::atomic<int64_t>& gauge;
      ~Leave() { gauge.fetch_sub(1); }
    } leave{metrics.in_flight};
    res = route(req, *r);
  }
  if (cors) {
    res.headers.emplace_back("Access-Control-Allow-Origin", origin);
    res.headers.emplace_back("Vary", "Origin");
  }
  return res;
}

HttpResponse HttpServer::Impl::route(const HttpRequest& req, const RouteSpec& r) {
  auto file = [](std::string_view name, const char* mime) {
    HttpResponse res;
    res.body = std::string(embedded_file(name));
    res.content_type = mime;
    return res;
  };
  if (r.path == "/v1/extract") return handle_extract(req, false);
  if (r.path == "/extract") return handle_extract(req, true);
  if (r.path == "/health") return handle_health();
  if (r.path == "/info") return handle_info();
  if (r.path == "/metrics") return handle_metrics();
  if (r.path == "/") return file("index.html", "text/html; charset=utf-8");
  if (r.path == "/app.js") return file("app.js", "text/javascript; charset=utf-8");
  if (r.path == "/style.css") return file("style.css", "text/css; charset=utf-8");
  return file("openapi.json", "application/json");
}

HttpResponse HttpServer::Impl::handle_metrics() {
  HttpResponse res;
  res.body = metrics.render();
  res.body += "# HELP process_resident_memory_bytes Resident memory of the service.\n";
  res.body += "# TYPE process_resident_memory_bytes gauge\n";
  res.body += "process_resident_memory_bytes " + std::to_string(resident_bytes()) + "\n";
  res.content_type = "text/plain; version=0.0.4; charset=utf-8";
  return res;
}

HttpResponse HttpServer::Impl::handle_health() {
  if (draining.load()) {
    return json_response(Json{{"status", "draining"}, {"error", "the service is stopping"}, {"error_type", "shutting_down"}}, 503);
  }
  std::shared_ptr<Batcher> b;
  std::string error;
  {
    std::lock_guard lock(mutex);
    b = batcher;
    error = load_error;
  }
  if (b) {
    const double stalled = b->stalled_for().count();
    const double limit = std::chrono::duration<double>(config.stall_limit).count();
    if (stalled <= limit) return json_response(Json{{"status", "ok"}});
    char message[160];
    std::snprintf(message, sizeof message, "the engine has made no progress for %.0f s (limit %.0f s) while it has work",
                  stalled, limit);
    return json_response(Json{{"status", "wedged"}, {"error", message}, {"error_type", "wedged"}}, 503);
  }
  if (error.empty()) {
    return json_response(Json{{"status", "loading"}, {"error", "the model is still loading"}, {"error_type", "not_ready"}}, 503);
  }
  return json_response(Json{{"status", "failed"}, {"error", "the model failed to load: " + error}, {"error_type", "not_ready"}}, 503);
}

HttpResponse HttpServer::Impl::handle_info() {
  Json info = {{"name", "rexnlu"}, {"version", REXNLU_VERSION}};
  {
    std::lock_guard lock(mutex);
    Json model = {{"path", config.model_path}, {"loaded", batcher != nullptr}};
    model["load_warnings"] = engine ? Json(engine->load_warnings()) : Json::array();
    if (engine) {
      const ModelInfo& mi = engine->model_info();
      model["device"] = mi.device;
      model["precision"] = mi.precision;
      model["backend"] = mi.backend;
      model["family"] = mi.family;  // which model family answers /v1/extract: "rex-uninlu" or "siamese-uie"
      model["architecture"] = mi.architecture;
    }
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
  Json gpus = Json::array();  // GPU memory where a model runs on a GPU (rexnlu/gpu_memory.h)
  for (const GpuMemory& g : gpu_memory())
    gpus.push_back({{"device", "cuda:" + std::to_string(g.device)}, {"held_bytes", g.held_bytes},
                    {"free_bytes", g.free_bytes}, {"total_bytes", g.total_bytes}});
  info["gpu_memory"] = std::move(gpus);
  return json_response(info);
}

HttpResponse HttpServer::Impl::handle_extract(const HttpRequest& req, bool alias) {
  std::string why_not;
  const std::shared_ptr<Batcher> b = current_batcher(why_not);
  if (!b) return error_response(503, why_not, "not_ready");

  Json body;
  try {
    body = parse_json_input(req.body);
  } catch (const Json::exception& e) {
    return error_response(400, std::string("malformed JSON: ") + e.what(), "invalid_json");
  }
  ExtractCall call;
  int64_t tokens = 0;
  try {
    call = parse_extract_call(body, alias, config.max_texts);
    for (Request& r : call.requests) r.cancel = req.client_gone;  // the client going away stops the work
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
    return error_response(422, e.what(), e.kind() == ErrorKind::kLimitExceeded ? "limit_exceeded" : "invalid_request");
  } catch (const Json::exception& e) {  // e.g. a value of the wrong type deep inside
    return error_response(422, e.what(), "invalid_request");
  }

  // A copy goes to the batcher: the response may need the texts (echo_text).
  Batcher::Outcome outcome = b->run(call.requests, tokens, Clock::now() + config.deadline);
  HttpResponse res;
  switch (outcome.status) {
    case Batcher::Status::kQueueFull:
      res = error_response(429, "the queue is full (" + std::to_string(config.batcher.max_queue) + " texts); retry later",
                           "queue_full");
      res.headers.emplace_back("Retry-After", std::to_string(static_cast<int64_t>(outcome.retry_after_seconds)));
      return res;
    case Batcher::Status::kOverloaded:
      res = error_response(429, "the work queued ahead would not be done within the deadline of " +
                                    std::to_string(config.deadline.count()) + " ms; retry later",
                           "overloaded");
      res.headers.emplace_back("Retry-After", std::to_string(static_cast<int64_t>(outcome.retry_after_seconds)));
      return res;
    case Batcher::Status::kDeadline:
      return error_response(504, "not done within the deadline of " + std::to_string(config.deadline.count()) + " ms",
                            "deadline_exceeded");
    case Batcher::Status::kStopped:
      return error_response(503, "the service is shutting down", "shutting_down");
    case Batcher::Status::kOk:
      break;
  }
  for (size_t i = 0; i < outcome.results.size(); ++i) {
    const Result& r = outcome.results[i];
    if (r.ok()) continue;
    const std::string where = call.many ? "texts[" + std::to_string(i) + "]: " : "";
    if (r.error_kind == ErrorKind::kInvalidInput) return error_response(422, where + r.error, "invalid_request");
    if (r.error_kind == ErrorKind::kLimitExceeded) return error_response(422, where + r.error, "limit_exceeded");
    if (r.error_kind == ErrorKind::kOutOfMemory) {  // the device ran out during this batch: retry, maybe smaller
      HttpResponse busy = error_response(503, where + r.error + "; retry later or with less text", "out_of_memory");
      busy.headers.emplace_back("Retry-After", "1");
      return busy;
    }
    if (r.error_kind == ErrorKind::kCancelled && req.client_gone && req.client_gone->load()) {
      return error_response(kClientClosed, "the client went away before the answer", "client_closed");
    }
    if (r.error_kind == ErrorKind::kCancelled) {  // its deadline passed as the engine checked it
      return error_response(504, "not done within the deadline of " + std::to_string(config.deadline.count()) + " ms",
                        "deadline_exceeded");
    }
    return error_response(500, where + r.error, "internal");
  }
  return json_response(extract_response(call, outcome.results));
}

HttpServer::HttpServer(ServerConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}

HttpServer::~HttpServer() {
  shutdown_batcher();
}

int HttpServer::bind() { return impl_->transport->bind(impl_->config.host, impl_->config.port); }

void HttpServer::listen() { impl_->transport->run(); }

void HttpServer::stop() {
  if (!impl_->draining.exchange(true) && impl_->config.drain_delay.count() > 0) {
    std::this_thread::sleep_for(impl_->config.drain_delay);  // still serving; /health says 503
  }
  std::shared_ptr<Batcher> b;
  {
    std::lock_guard lock(impl_->mutex);
    b = impl_->batcher;
  }
  if (b) b->cancel_after(Clock::now() + impl_->config.drain_timeout);
  impl_->transport->stop();
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
