#include "serve_command.h"

#include <csignal>
#include <iostream>
#include <memory>
#include <unistd.h>
#include <thread>

#include "command_util.h"
#include "rexnlu/default_model.h"
#include "server/http_server.h"

namespace rexnlu::apps {
namespace {

struct ServeArgs {
  std::string model;
  LoadOptions load;
  server::ServerConfig config;
  int64_t deadline_ms = 30000;
  int64_t drain_timeout_ms = 3000;
  int64_t drain_delay_ms = 0;
  int64_t batch_wait_us = 0;
  int64_t read_timeout_ms = 30000;
  int64_t idle_timeout_ms = 5000;
  int64_t stall_seconds = 60;
};

// SIGTERM / SIGINT: the handler only writes to a pipe (async-signal-safe; any thread may run it,
// OpenBLAS starts threads before main), and a waiter thread reads it and calls HttpServer::stop().
int g_signal_pipe[2] = {-1, -1};

extern "C" void on_stop_signal(int signal_number) {
  const unsigned char byte = static_cast<unsigned char>(signal_number);
  [[maybe_unused]] const ssize_t n = write(g_signal_pipe[1], &byte, 1);
}

int run_serve(ServeArgs& args) {
  if (pipe(g_signal_pipe) != 0) throw IoError("cannot create the signal pipe");
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not end the process

  const std::filesystem::path model_dir = args.model.empty() ? default_model_dir() : std::filesystem::path(args.model);
  args.config.model_path = model_dir.string();
  args.config.deadline = std::chrono::milliseconds(args.deadline_ms);
  args.config.drain_timeout = std::chrono::milliseconds(args.drain_timeout_ms);
  args.config.drain_delay = std::chrono::milliseconds(args.drain_delay_ms);
  args.config.batcher.max_wait = std::chrono::microseconds(args.batch_wait_us);
  args.config.read_timeout = std::chrono::milliseconds(args.read_timeout_ms);
  args.config.idle_timeout = std::chrono::milliseconds(args.idle_timeout_ms);
  args.config.stall_limit = std::chrono::seconds(args.stall_seconds);
  server::HttpServer server(args.config);
  const int port = server.bind();
  // Tests and scripts read this line to find an ephemeral port (--port 0).
  std::cout << "rexnlu serve: listening on http://" << args.config.host << ":" << port << std::endl;

  // /health answers 503 while this runs.
  std::thread loader([&server, model_dir, load = args.load] {
    try {
      auto engine = std::make_unique<Engine>(Engine::load(model_dir, load));
      for (const auto& w : engine->load_warnings()) std::cerr << "rexnlu serve: warning: " << w << '\n';
      server.set_engine(std::move(engine));
      std::cerr << "rexnlu serve: model loaded from " << model_dir.string() << std::endl;
    } catch (const std::exception& e) {
      std::cerr << "rexnlu serve: cannot load the model: " << e.what() << std::endl;
      server.set_load_error(e.what());
    }
  });
  std::thread signal_waiter([&server] {
    unsigned char byte = 0;
    if (read(g_signal_pipe[0], &byte, 1) == 1 && byte != 0) {
      std::cerr << "rexnlu serve: signal " << int{byte} << ", finishing requests in flight" << std::endl;
    }
    server.stop();
  });

  server.listen();  // returns after stop(), once the accepted requests are answered
  loader.join();
  server.shutdown_batcher();
  // listen() also returns when the socket fails, with no signal: wake the waiter to join it.
  const unsigned char none = 0;
  [[maybe_unused]] const ssize_t n = write(g_signal_pipe[1], &none, 1);
  signal_waiter.join();
  std::cerr << "rexnlu serve: stopped" << std::endl;
  return 0;
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("serve", "HTTP service: POST /v1/extract, a web page at /, /metrics (docs/http_api.md)");
  auto args = std::make_shared<ServeArgs>();
  server::ServerConfig& c = args->config;
  cmd->add_option("--model", args->model, "model directory (default: the bundled model)");
  add_load_options(*cmd, args->load, "--compute-threads");
  cmd->add_option("--host", c.host, "address to bind")->capture_default_str();
  cmd->add_option("--port", c.port, "TCP port (0 = any free port, printed on stdout)")->capture_default_str()->check(int_range(0, 65535));
  cmd->add_option("--api-key", c.api_key, "require \"Authorization: Bearer KEY\" on every route but /health")
      ->envname("REXNLU_API_KEY");  // the environment keeps the key out of `ps`
  cmd->add_option("--max-body-bytes", c.max_body_bytes, "larger request bodies get 413")->capture_default_str()->check(int_range(1, 1 << 30));
  cmd->add_option("--max-texts", c.max_texts, "texts per request at most")->capture_default_str()->check(int_range(1, 100000));
  cmd->add_option("--max-queue", c.batcher.max_queue, "texts waiting at most; past it 429")->capture_default_str()->check(int_range(1, 10000000));
  cmd->add_option("--token-budget", c.batcher.token_budget, "tokens per batch at most (estimated cost: text tokens x prompts)")->capture_default_str()->check(int_range(1, 1 << 24));
  cmd->add_option("--deadline-ms", args->deadline_ms, "per-request deadline; past it 504")->capture_default_str()->check(int_range(1, 86400000));
  cmd->add_option("--batch-wait-us", args->batch_wait_us, "how long an idle batcher waits for more requests")->capture_default_str()->check(int_range(0, 10000000));
  cmd->add_option("--threads", c.threads, "threads for extract requests")->capture_default_str()->check(int_range(1, 1024));
  cmd->add_option("--drain-timeout-ms", args->drain_timeout_ms,
                  "on SIGTERM, work still running this long after is cancelled (503)")
      ->capture_default_str()
      ->check(int_range(0, 86400000));
  cmd->add_option("--drain-delay-ms", args->drain_delay_ms,
                  "on SIGTERM, /health answers 503 this long while requests are still accepted, then the socket closes "
                  "(behind a load balancer: more than its health-check interval x fall count)")
      ->capture_default_str()
      ->check(int_range(0, 3600000));
  add_limit_options(*cmd, c.limits);
  cmd->add_option("--max-connections", c.max_connections, "open connections at most; more get 503")->capture_default_str()->check(int_range(1, 100000));
  cmd->add_option("--max-connections-per-ip", c.max_connections_per_ip, "open connections from one client address at most (0 = no such limit); more get 503")->capture_default_str()->check(int_range(0, 100000));
  cmd->add_option("--max-header-bytes", c.max_header_bytes, "request line + headers at most; past it 431")->capture_default_str()->check(int_range(1024, 1 << 20));
  cmd->add_option("--read-timeout-ms", args->read_timeout_ms, "a request must arrive whole within this; past it 408")->capture_default_str()->check(int_range(100, 3600000));
  cmd->add_option("--idle-timeout-ms", args->idle_timeout_ms, "keep-alive connections idle this long are closed")->capture_default_str()->check(int_range(100, 3600000));
  cmd->add_option("--allow-host", c.allowed_hosts, "without --api-key on loopback: another name accepted in the Host header (repeatable)");
  cmd->add_option("--allow-origin", c.allowed_origins, "without --api-key: an origin (e.g. http://localhost:3000) whose pages may call the API, with CORS (repeatable)");
  cmd->add_flag("--access-log,!--no-access-log", c.access_log, "one line per request on stderr: method, route, status, duration, sizes (default: on)");
  cmd->add_option("--stall-seconds", args->stall_seconds, "/health answers 503 \"wedged\" when the engine makes no progress this long")->capture_default_str()->check(int_range(1, 86400));
  cmd->callback([args]() {
    try {
      run_serve(*args);
    } catch (const Error& e) {
      std::cerr << "rexnlu serve: " << e.what() << '\n';
      throw CLI::RuntimeError(1);
    }
  });
}

}  // namespace rexnlu::apps
