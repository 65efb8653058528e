#include "server/http_transport.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/status.hpp>

#include <sys/socket.h>

#include <array>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "rexnlu/error.h"
#include "server/extract_request.h"

namespace rexnlu::server {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// After a response that closes the connection, unread request bytes are read and dropped for at
// most this long, so that the client reads the response instead of a reset (lingering close).
constexpr auto kLinger = std::chrono::seconds(2);
constexpr size_t kLingerBytes = 4 << 20;
// While a handler runs, the connection keeps reading, to see the client go away (EOF or reset);
// bytes of pipelined requests that arrive meanwhile are kept, up to this much (then it stops
// reading until the response is written).
constexpr size_t kWatchBytes = 64 << 10;
constexpr int kListenBacklog = 1024;
// On stop(), a request still arriving gets at most this long to finish (then 408), so that slow
// clients cannot hold up a shutdown for the whole read timeout.
constexpr auto kDrainGrace = std::chrono::seconds(2);

std::string serialize(const HttpResponse& r, bool keep_alive, bool head) {
  const auto beast_reason = boost::beast::http::obsolete_reason(static_cast<boost::beast::http::status>(r.status));
  const std::string reason =
      r.status == kClientClosed ? "Client Closed Request" : std::string(beast_reason.data(), beast_reason.size());
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + reason + "\r\n";
  out += "Content-Type: " + r.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  out += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  for (const auto& [k, v] : r.headers) out += k + ": " + v + "\r\n";
  out += "\r\n";
  if (!head) out += r.body;
  return out;
}

}  // namespace

HttpResponse error_response(int status, const std::string& message, const std::string& error_type) {
  HttpResponse r;
  r.status = status;
  r.body = error_body(message, error_type);
  r.error_type = error_type;
  return r;
}

struct HttpTransport::Impl {
  Impl(TransportConfig c, TransportHooks h)
      : config(c), hooks(std::move(h)), acceptor(io), retry_accept(io),
        pool(static_cast<size_t>(std::max(1, c.threads))), work(io.get_executor()) {}

  TransportConfig config;
  TransportHooks hooks;
  asio::io_context io{1};
  tcp::acceptor acceptor;
  asio::steady_timer retry_accept;  // after EMFILE
  asio::thread_pool pool;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  // The I/O thread's own state.
  std::unordered_set<Connection*> connections;
  std::unordered_map<std::string, size_t> per_address;  // open connections by client address (with a per-IP limit)
  bool stopping = false;

  void accept();
  void admit(tcp::socket socket);
  void refuse(tcp::socket& socket, const std::string& message);
  void closed(Connection* c);
  void do_stop();
};

struct HttpTransport::Connection : std::enable_shared_from_this<Connection> {
  enum class Phase { kReading, kHandling, kWriting, kLingering, kClosed };

  Connection(Impl* s, tcp::socket sock)
      : server(s), socket(std::move(sock)), timer(server->io), reader(server->config.limits) {}

  Impl* server;  // outlives every connection: run() returns only once all are closed
  tcp::socket socket;
  std::string address;  // the client's, when connections per address are counted
  asio::steady_timer timer;
  RequestReader reader;
  std::string pending;  // bytes read and not yet parsed (the rest of this request, or the next ones)
  std::array<char, 16384> buffer{};
  Phase phase = Phase::kReading;
  bool reading = false;  // an async read is outstanding
  bool idle_armed = false;  // the idle timer runs (armed once per idle period: stray CRLFs do not renew it)
  unsigned timer_generation = 0;
  Clock::time_point started;  // the current request's first byte
  size_t lingered = 0;
  Exchange exchange;          // of the request being answered
  std::string out;            // the response being written
  bool keep_alive = true;
  bool head = false;
  std::shared_ptr<std::atomic<bool>> client_gone;  // of the request a pool handler is running

  // While a pool handler runs: reads on (see kWatchBytes), unless the client already went away.
  void watch() {
    if (client_gone && !client_gone->load() && pending.size() < kWatchBytes) read();
  }

  void start() {
    boost::system::error_code ec;
    socket.set_option(tcp::no_delay(true), ec);
    process();
  }

  void arm(Clock::time_point when) {
    const unsigned generation = ++timer_generation;
    timer.expires_at(when);
    timer.async_wait([self = shared_from_this(), generation](boost::system::error_code ec) {
      if (!ec && generation == self->timer_generation) self->timeout();
    });
  }

  // Parses what is pending; answers a complete request, or reads more.
  void process() {
    if (phase != Phase::kReading) return;
    const bool was_started = reader.started();
    pending.erase(0, reader.feed(pending));
    if (!was_started && reader.started()) {
      idle_armed = false;
      started = Clock::now();
      arm(started + server->config.read_timeout);
    }
    if (reader.take_continue()) {
      static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
      // Best effort and small: a client that misses it sends the body after its own wait.
      [[maybe_unused]] const ssize_t n = ::send(socket.native_handle(), kContinue, sizeof kContinue - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    switch (reader.state()) {
      case RequestReader::State::kDone:
        return dispatch(reader.take());
      case RequestReader::State::kError: {
        const RequestError& e = reader.error();
        exchange = {};
        exchange.method = e.method;
        exchange.path = e.path;
        return respond(error_response(e.status, e.message, e.error_type), /*close=*/true);
      }
      case RequestReader::State::kNeedMore:
        break;
    }
    if (!reader.started()) {
      if (server->stopping) return close();
      if (!idle_armed) arm(Clock::now() + server->config.idle_timeout);
      idle_armed = true;
    }
    read();
  }

  void read() {
    if (reading) return;
    reading = true;
    socket.async_read_some(asio::buffer(buffer), [self = shared_from_this()](boost::system::error_code ec, size_t n) {
      self->reading = false;
      self->on_read(ec, n);
    });
  }

  void on_read(boost::system::error_code ec, size_t n) {
    if (phase == Phase::kLingering) {
      lingered += n;
      if (ec || lingered > kLingerBytes) return close();
      return read();
    }
    if (phase == Phase::kClosed) return;
    if (phase != Phase::kReading) {  // a response is being made or written
      if (ec) {
        // The client closed or reset the connection: the handler's work can stop, and the
        // connection closes once the response is written (or fails to be).
        if (client_gone) client_gone->store(true);
        keep_alive = false;
        return;
      }
      pending.append(buffer.data(), n);  // the next request, pipelined
      return watch();
    }
    if (ec) return close();  // EOF or reset: a partial request has nobody to answer
    pending.append(buffer.data(), n);
    process();
  }

  void timeout() {
    switch (phase) {
      case Phase::kReading:
        if (!reader.started()) return close();  // idle keep-alive connection
        exchange = {};
        return respond(error_response(408, "the request did not arrive within " +
                                               std::to_string(server->config.read_timeout.count()) + " ms",
                                      "request_timeout"),
                       /*close=*/true);
      case Phase::kHandling:
        return;
      case Phase::kWriting:
      case Phase::kLingering:
      case Phase::kClosed:
        return close();
    }
  }

  void dispatch(HttpRequest request) {
    phase = Phase::kHandling;
    ++timer_generation;  // no deadline while a handler runs: the handler has its own
    timer.cancel();
    exchange = {};
    exchange.method = request.method;
    exchange.path = request.path;
    exchange.bytes_in = request.body.size();
    keep_alive = request.keep_alive;
    head = request.method == "HEAD";
    if (server->hooks.may_block && server->hooks.may_block(request)) {
      client_gone = std::make_shared<std::atomic<bool>>(false);
      request.client_gone = client_gone;
      watch();
      asio::post(server->pool, [self = shared_from_this(), request = std::move(request)] {
        HttpResponse response = self->run_handler(request);
        asio::post(self->server->io, [self, response = std::move(response)] { self->respond(response, false); });
      });
    } else {
      respond(run_handler(request), false);
    }
  }

  HttpResponse run_handler(const HttpRequest& request) {
    try {
      return server->hooks.handle(request);
    } catch (const std::exception& e) {
      return error_response(500, std::string("internal error: ") + e.what(), "internal");
    }
  }

  void respond(const HttpResponse& response, bool close_after) {
    if (phase == Phase::kClosed) return;
    if (close_after || server->stopping) keep_alive = false;
    exchange.status = response.status;
    exchange.error_type = response.error_type;
    exchange.bytes_out = response.body.size();
    if (response.status >= 500) exchange.error_body = response.body;
    out = serialize(response, keep_alive, head);
    phase = Phase::kWriting;
    arm(Clock::now() + server->config.write_timeout);
    asio::async_write(socket, asio::buffer(out), [self = shared_from_this()](boost::system::error_code ec, size_t) {
      self->written(ec);
    });
  }

  void written(boost::system::error_code ec) {
    exchange.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    if (server->hooks.done) server->hooks.done(exchange);
    out.clear();
    head = false;
    const bool gone = client_gone && client_gone->load();
    client_gone.reset();
    if (ec || phase != Phase::kWriting || gone) return close();
    if (!keep_alive) return linger();
    phase = Phase::kReading;
    ++timer_generation;
    timer.cancel();
    idle_armed = false;
    process();  // a pipelined request may be waiting in `pending`
  }

  void linger() {
    phase = Phase::kLingering;
    boost::system::error_code ec;
    socket.shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return close();
    arm(Clock::now() + kLinger);
    read();
  }

  void close() {
    if (phase == Phase::kClosed) return;
    phase = Phase::kClosed;
    ++timer_generation;
    timer.cancel();
    boost::system::error_code ec;
    socket.close(ec);
    server->closed(this);
  }
};

void HttpTransport::Impl::refuse(tcp::socket& socket, const std::string& message) {
  const HttpResponse r = error_response(503, message + "; retry later", "too_many_connections");
  const std::string text = serialize(r, false, false);
  [[maybe_unused]] const ssize_t n = ::send(socket.native_handle(), text.data(), text.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  boost::system::error_code ec;
  socket.shutdown(tcp::socket::shutdown_both, ec);
  socket.close(ec);
  if (hooks.done) {
    Exchange e;
    e.status = 503;
    e.error_type = r.error_type;
    e.bytes_out = r.body.size();
    hooks.done(e);
  }
}

void HttpTransport::Impl::accept() {
  acceptor.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
    if (stopping || !acceptor.is_open()) return;
    if (ec) {
      // Out of file descriptors (or a transient error): try again shortly rather than spin.
      retry_accept.expires_after(std::chrono::milliseconds(50));
      retry_accept.async_wait([this](boost::system::error_code) {
        if (!stopping) accept();
      });
      return;
    }
    admit(std::move(socket));
    accept();
  });
}

void HttpTransport::Impl::admit(tcp::socket socket) {
  if (connections.size() >= config.max_connections) {
    return refuse(socket, "too many connections (" + std::to_string(config.max_connections) + ")");
  }
  std::string address;
  if (config.max_connections_per_ip > 0) {
    boost::system::error_code ec;
    const tcp::endpoint peer = socket.remote_endpoint(ec);
    if (ec) return;  // already gone
    address = peer.address().to_string();
    if (per_address[address] >= config.max_connections_per_ip) {
      return refuse(socket, "too many connections from " + address + " (" +
                                std::to_string(config.max_connections_per_ip) + ")");
    }
    ++per_address[address];
  }
  auto c = std::make_shared<Connection>(this, std::move(socket));
  c->address = std::move(address);
  connections.insert(c.get());
  c->start();
}

void HttpTransport::Impl::closed(Connection* c) {
  connections.erase(c);
  if (!c->address.empty()) {
    const auto it = per_address.find(c->address);
    if (it != per_address.end() && --it->second == 0) per_address.erase(it);
  }
  if (stopping && connections.empty()) work.reset();
}

void HttpTransport::Impl::do_stop() {
  if (stopping) return;
  stopping = true;
  boost::system::error_code ec;
  acceptor.close(ec);
  retry_accept.cancel();
  // Idle connections close now; the others after their response (keep_alive is then off).
  std::vector<Connection*> idle;
  const Clock::time_point grace = Clock::now() + kDrainGrace;
  for (Connection* c : connections) {
    if (c->phase != Connection::Phase::kReading) continue;
    if (!c->reader.started()) {
      idle.push_back(c);
    } else if (c->started + config.read_timeout > grace) {
      c->arm(grace);
    }
  }
  for (Connection* c : idle) c->close();
  if (connections.empty()) work.reset();
}

HttpTransport::HttpTransport(TransportConfig config, TransportHooks hooks)
    : impl_(std::make_unique<Impl>(config, std::move(hooks))) {}

HttpTransport::~HttpTransport() {
  impl_->pool.join();
}

int HttpTransport::bind(const std::string& host, int port) {
  const std::string where = host + ":" + std::to_string(port);
  if (port < 0 || port > 65535) throw IoError("cannot listen on " + where + ": the port must be 0 to 65535");
  try {
    tcp::resolver resolver(impl_->io);
    const auto endpoints = resolver.resolve(host, std::to_string(port), tcp::resolver::numeric_service);
    const tcp::endpoint endpoint = endpoints.begin()->endpoint();
    tcp::acceptor& a = impl_->acceptor;
    a.open(endpoint.protocol());
    // SO_REUSEADDR only (restarts while old connections are in TIME_WAIT); never SO_REUSEPORT,
    // which would let a second server bind the same port and silently share its connections.
    a.set_option(tcp::acceptor::reuse_address(true));
    a.bind(endpoint);
    // A backlog of 1024 (capped by net.core.somaxconn): a burst of clients connecting while both
    // cores run a batch must not wait for SYN retransmissions (docs/benchmarks.md, load test).
    a.listen(kListenBacklog);
    return a.local_endpoint().port();
  } catch (const boost::system::system_error& e) {
    throw IoError("cannot listen on " + where + ": " + e.code().message());
  }
}

void HttpTransport::run() {
  impl_->accept();
  impl_->io.run();
}

void HttpTransport::stop() {
  asio::post(impl_->io, [impl = impl_.get()] { impl->do_stop(); });
}

}  // namespace rexnlu::server
