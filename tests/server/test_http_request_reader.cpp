// RequestReader on its own: requests split at every byte (as reads may split them), pipelined
// requests, and each limit with the status it maps to.
#include <gtest/gtest.h>

#include "server/http_request_reader.h"

namespace rexnlu::server {
namespace {

using State = RequestReader::State;

// Feeds `bytes` the way a connection does: whatever is pending plus `piece` more bytes each time.
std::vector<HttpRequest> read_all(RequestReader& reader, const std::string& bytes, size_t piece) {
  std::vector<HttpRequest> out;
  std::string pending;
  size_t offered = 0;
  for (;;) {
    pending.erase(0, reader.feed(pending));
    if (reader.state() == State::kError) return out;
    if (reader.state() == State::kDone) {
      out.push_back(reader.take());
      continue;
    }
    if (offered == bytes.size()) return out;
    pending += bytes.substr(offered, piece);
    offered = std::min(bytes.size(), offered + piece);
  }
}

const std::string kChunked =
    "POST /v1/extract?x=1 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
    "5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nTrailer: t\r\n\r\n";

TEST(HttpRequestReader, ChunkedRequestSplitAtEveryByte) {
  for (size_t piece : {1, 2, 3, 7, 1000}) {
    RequestReader reader({});
    const auto requests = read_all(reader, kChunked + "\r\nGET /health HTTP/1.1\r\n\r\n", piece);
    ASSERT_EQ(requests.size(), 2u) << piece << ": " << reader.error().message;
    EXPECT_EQ(requests[0].method, "POST");
    EXPECT_EQ(requests[0].path, "/v1/extract");
    EXPECT_EQ(requests[0].target, "/v1/extract?x=1");
    EXPECT_EQ(requests[0].body, "hello, world");
    EXPECT_EQ(requests[0].header("host"), "a");
    EXPECT_EQ(requests[1].path, "/health");
    EXPECT_TRUE(requests[1].keep_alive);
  }
}

struct Refused {
  std::string bytes;
  int status;
  std::string error_type;
};

TEST(HttpRequestReader, LimitsAndCodings) {
  RequestLimits limits;
  limits.max_body_bytes = 10;
  limits.max_header_bytes = 200;
  limits.max_header_fields = 3;
  std::string many_fields = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 4; ++i) {
    many_fields += 'A';
    many_fields += std::to_string(i);
    many_fields += ": b\r\n";
  }
  const std::vector<Refused> cases = {
      {"POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n", 413, "body_too_large"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n6\r\nabcdef\r\n0\r\n\r\n", 413, "body_too_large"},
      {many_fields + "\r\n", 431, "headers_too_large"},
      {"GET / HTTP/1.1\r\nX: " + std::string(300, 'x') + "\r\n\r\n", 431, "headers_too_large"},
      {"POST / HTTP/1.1\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}", 415, "unsupported_encoding"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501, "unsupported_encoding"},
      {"GET http://a/ HTTP/1.1\r\n\r\n", 400, "invalid_http"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n", 400, "invalid_http"},
      {"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 400, "invalid_http"},  // a TLS ClientHello
  };
  for (const Refused& c : cases) {
    for (size_t piece : {1, 1000}) {
      RequestReader reader(limits);
      EXPECT_TRUE(read_all(reader, c.bytes, piece).empty()) << c.bytes;
      EXPECT_EQ(reader.state(), State::kError) << c.bytes;
      EXPECT_EQ(reader.error().status, c.status) << c.bytes << " -> " << reader.error().message;
      EXPECT_EQ(reader.error().error_type, c.error_type) << c.bytes;
    }
  }
  RequestReader ok(limits);
  ASSERT_EQ(read_all(ok, "POST / HTTP/1.1\r\nContent-Encoding: identity\r\nContent-Length: 10\r\n\r\n0123456789", 1).size(), 1u);
}

TEST(HttpRequestReader, ExpectContinueOnceBeforeTheBody) {
  RequestReader reader({});
  const std::string header = "POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n";
  EXPECT_EQ(reader.feed(header), header.size());
  EXPECT_EQ(reader.state(), State::kNeedMore);
  EXPECT_TRUE(reader.take_continue());
  EXPECT_FALSE(reader.take_continue());
  reader.feed("{}");
  EXPECT_EQ(reader.state(), State::kDone);
  EXPECT_EQ(reader.take().body, "{}");
}

TEST(HttpRequestReader, Http10ClosesAfterTheResponse) {
  RequestReader reader({});
  reader.feed("GET /health HTTP/1.0\r\n\r\n");
  ASSERT_EQ(reader.state(), State::kDone);
  EXPECT_FALSE(reader.take().keep_alive);
}

}  // namespace
}  // namespace rexnlu::server
