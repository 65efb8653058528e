#include "server/http_request_reader.h"

// Boost 1.81's chunk parser asserts `n >= 5` when a final chunk's trailer arrives a few bytes at a
// time, although the code after the assertion handles that case (returns need_more); upstream
// removed the wrong assertion (boostorg/beast pull request 2861, Boost 1.86). Release builds have
// no assertions anyway; this keeps debug and fuzzing builds from stopping on it.
#define BOOST_DISABLE_ASSERTS
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <algorithm>
#include <cctype>
#include <iterator>

namespace rexnlu::server {
namespace {

namespace http = boost::beast::http;

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (same_name(k, name)) return v;
  }
  return {};
}

struct RequestReader::Parser {
  http::request_parser<http::string_body> p;
};

RequestReader::RequestReader(RequestLimits limits) : limits_(limits) { take(); }

RequestReader::~RequestReader() = default;

void RequestReader::fail(int status, std::string error_type, std::string message) {
  state_ = State::kError;
  error_ = {status, std::move(error_type), std::move(message), {}, {}};
  if (parser_->p.is_header_done()) {
    const auto& msg = parser_->p.get();
    error_.method = std::string(msg.method_string());
    error_.path = std::string(msg.target().substr(0, msg.target().find('?')));
  }
}

// Once the header is complete: what the body reader cannot take.
void RequestReader::check_header() {
  header_checked_ = true;
  const auto& msg = parser_->p.get();
  if (static_cast<size_t>(std::distance(msg.begin(), msg.end())) > limits_.max_header_fields) {
    return fail(431, "headers_too_large", "more than " + std::to_string(limits_.max_header_fields) + " header fields");
  }
  if (msg.target().empty() || msg.target().front() != '/') {
    return fail(400, "invalid_http", "malformed HTTP request: the target must be a path starting with \"/\"");
  }
  for (const auto& field : msg) {
    const std::string_view name(field.name_string().data(), field.name_string().size());
    const std::string_view value = trim(std::string_view(field.value().data(), field.value().size()));
    if (same_name(name, "Content-Encoding") && !same_name(value, "identity")) {
      return fail(415, "unsupported_encoding",
                  "Content-Encoding \"" + std::string(value) + "\" is not supported: send the body uncompressed");
    }
    if (same_name(name, "Transfer-Encoding") && !same_name(value, "chunked")) {
      return fail(501, "unsupported_encoding",
                  "Transfer-Encoding \"" + std::string(value) + "\" is not supported (only \"chunked\")");
    }
  }
  if (same_name(trim(std::string_view(msg[http::field::expect].data(), msg[http::field::expect].size())), "100-continue") &&
      !parser_->p.is_done()) {
    continue_pending_ = true;
  }
}

size_t RequestReader::feed(std::string_view data) {
  if (state_ != State::kNeedMore) return 0;
  size_t used = 0;
  while (state_ == State::kNeedMore && used < data.size()) {
    // Bytes between requests: the CRLF some clients send after a body (RFC 9112, 2.2).
    if (!started_) {
      while (used < data.size() && (data[used] == '\r' || data[used] == '\n')) ++used;
      if (used == data.size()) break;
      started_ = true;
    }
    boost::beast::error_code ec;
    const size_t n = parser_->p.put(boost::asio::buffer(data.data() + used, data.size() - used), ec);
    used += n;
    if (ec == http::error::need_more) {
      // Beast wants more bytes than it was given: never call it again with the same ones (its
      // chunk-header scan assumes a longer buffer next time).
      if (parser_->p.is_header_done() && !header_checked_) check_header();
      break;
    }
    if (ec == http::error::header_limit) {
      fail(431, "headers_too_large", "the request header is larger than " + std::to_string(limits_.max_header_bytes) + " bytes");
    } else if (ec == http::error::body_limit) {
      fail(413, "body_too_large", "the body is larger than the limit of " + std::to_string(limits_.max_body_bytes) + " bytes");
    } else if (ec) {
      fail(400, "invalid_http", "malformed HTTP request: " + ec.message());
    } else {
      if (parser_->p.is_header_done() && !header_checked_) check_header();
      if (state_ == State::kNeedMore && parser_->p.is_done()) state_ = State::kDone;
      if (n == 0) break;
    }
  }
  return used;
}

bool RequestReader::take_continue() { return std::exchange(continue_pending_, false) && state_ == State::kNeedMore; }

HttpRequest RequestReader::take() {
  HttpRequest out;
  if (parser_ && state_ == State::kDone) {
    auto msg = parser_->p.release();
    out.method = std::string(msg.method_string());
    out.target = std::string(msg.target());
    out.path = out.target.substr(0, out.target.find('?'));
    for (const auto& field : msg) out.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    out.keep_alive = msg.keep_alive();
    out.body = std::move(msg.body());
  }
  parser_ = std::make_unique<Parser>();
  parser_->p.eager(true);
  parser_->p.header_limit(static_cast<uint32_t>(std::min<size_t>(limits_.max_header_bytes, UINT32_MAX)));
  parser_->p.body_limit(limits_.max_body_bytes);
  state_ = State::kNeedMore;
  started_ = header_checked_ = continue_pending_ = false;
  error_ = {};
  return out;
}

}  // namespace rexnlu::server
