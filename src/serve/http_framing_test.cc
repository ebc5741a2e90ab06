// RequestFramer as a table of raw requests: what is taken (and how httplib then sees it),
// what is refused with which status, and that bytes arriving one at a time frame the same.
#include "serve/http_framing.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace moex::serve {
namespace {

FramingLimits small_limits() {
  FramingLimits l;
  l.max_head_bytes = 1024;
  l.max_fields = 8;
  l.max_field_bytes = 200;
  l.max_body_bytes = 100;
  return l;
}

struct Framed {
  bool done = false;
  int status = 0;  // 0: taken
  std::string message, request;
  size_t consumed = 0;
};

// Feeds `raw` `step` bytes at a time, as a connection would deliver it.
Framed frame(const std::string& raw, size_t step = 0) {
  RequestFramer f(small_limits());
  Framed out;
  for (size_t n = step ? step : raw.size(); !out.done; n = std::min(raw.size(), n + step)) {
    out.done = f.advance(std::string_view(raw).substr(0, n));
    if (n == raw.size() || step == 0) break;
  }
  if (f.refused()) {
    out.status = f.status();
    out.message = f.message();
  } else if (f.complete()) {
    out.consumed = f.consumed();
    out.request = f.take_request();
  }
  return out;
}

const std::string kPost = "POST /v1/completions HTTP/1.1\r\nHost: x\r\n";

TEST(RequestFramer, TakesALengthFramedRequestAndLeavesWhatFollows) {
  const std::string raw = kPost + "Content-Length: 5\r\n\r\nhello" + "GET /health HTTP/1.1\r\n\r\n";
  for (size_t step : {0, 1, 7}) {
    const Framed f = frame(raw, step);
    ASSERT_TRUE(f.done) << step;
    EXPECT_EQ(f.status, 0) << f.message;
    EXPECT_EQ(f.consumed, raw.find("GET"));
    EXPECT_EQ(f.request, kPost + "Content-Length: 5\r\n\r\nhello");
  }
}

TEST(RequestFramer, DecodesAChunkedBodyIntoAContentLength) {
  const std::string raw =
      kPost + "Transfer-Encoding: chunked\r\n\r\n3;ext=1\r\nhel\r\n2\r\nlo\r\n0\r\nX-T: 1\r\n\r\n";
  for (size_t step : {0, 1, 5}) {
    const Framed f = frame(raw, step);
    ASSERT_TRUE(f.done) << step;
    EXPECT_EQ(f.status, 0) << f.message;
    EXPECT_EQ(f.consumed, raw.size());
    EXPECT_EQ(f.request, kPost + "Content-Length: 5\r\n\r\nhello");
  }
}

// Empty lines before the request line are skipped, however many and however they arrive;
// "\r\n\r\n" there used to end a head that had no request line.
TEST(RequestFramer, EmptyLinesBeforeTheRequestLineAreSkipped) {
  for (const std::string lead : {"\r\n", "\r\n\r\n", "\r\n\r\n\r\n"}) {
    const std::string raw = lead + "GET /health HTTP/1.1\r\n\r\n";
    for (size_t step : {0, 1, 2, 3}) {
      const Framed f = frame(raw, step);
      ASSERT_TRUE(f.done) << step;
      EXPECT_EQ(f.status, 0) << f.message;
      EXPECT_EQ(f.request, "GET /health HTTP/1.1\r\nContent-Length: 0\r\n\r\n") << step;
      EXPECT_EQ(f.consumed, raw.size());
    }
  }
  RequestFramer f(small_limits());
  EXPECT_FALSE(f.advance("\r\n\r\n\r\n"));  // still waiting for a request line
  EXPECT_FALSE(f.head_complete());
  // Not forever: the empty lines count against the head's bound.
  EXPECT_TRUE(f.advance("\r\n\r\n\r\n" + std::string(2000, '\r') + "\n"));
  EXPECT_EQ(f.status(), 431);
}

TEST(RequestFramer, ARequestWithoutABodyGetsContentLengthZero) {
  const Framed f = frame("\r\nGET /health HTTP/1.1\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_EQ(f.status, 0) << f.message;
  EXPECT_EQ(f.request, "GET /health HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
}

TEST(RequestFramer, WaitsForTheWholeBody) {
  RequestFramer f(small_limits());
  const std::string raw = kPost + "Content-Length: 10\r\n\r\nhello";
  EXPECT_FALSE(f.advance(raw));
  EXPECT_TRUE(f.head_complete());
  EXPECT_FALSE(f.complete());
  EXPECT_TRUE(f.advance(raw + "world"));
  EXPECT_TRUE(f.complete());
}

TEST(RequestFramer, RefusesWhatIsAmbiguousOrTooLarge) {
  std::string many;
  for (int i = 0; i < 9; ++i) many += "X-" + std::to_string(i) + ": 1\r\n";
  const std::string chunks_101 = "Transfer-Encoding: chunked\r\n\r\n64\r\n" +
                                 std::string(100, 'a') + "\r\n1\r\nb\r\n0\r\n\r\n";
  struct Case {
    std::string raw;
    int status;
    std::string says;
  };
  const std::vector<Case> cases = {
      {kPost + "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 400, "conflicting"},
      {kPost + "Content-Length: 5, 6\r\n\r\nhello!", 400, "conflicting"},
      {kPost + "Content-Length: -1\r\n\r\n", 400, "Content-Length"},
      {kPost + "Content-Length: 0x5\r\n\r\n", 400, "Content-Length"},
      {kPost + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "ambiguous"},
      {kPost + "Transfer-Encoding: gzip, chunked\r\n\r\n", 501, "gzip"},
      {kPost + "Content-Length: 101\r\n\r\n", 413, "larger than 100"},
      {kPost + chunks_101, 413, "larger than 100"},
      {kPost + "Transfer-Encoding: chunked\r\n\r\nzz\r\n", 400, "chunk size"},
      {kPost + "Transfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n", 400, "CRLF"},
      {kPost + many + "\r\n", 431, "more than 8 header fields"},
      {kPost + "X-Big: " + std::string(300, 'a') + "\r\n\r\n", 431, "longer than 200"},
      {kPost + std::string(2000, 'a'), 431, "larger than 1024"},
      {kPost + " folded\r\n\r\n", 400, "folding"},
      {kPost + "Bad Name: 1\r\n\r\n", 400, "malformed header field"},
      {kPost + "Content-Length : 1\r\n\r\nx", 400, "malformed header field"},
      {kPost + "X: a\rb\r\n\r\n", 400, "bare CR"},
      // Lines of a chunked body past their bound, refused whether their CRLF has come or not
      // (at once, a complete line used to be taken whatever its length).
      {kPost + "Transfer-Encoding: chunked\r\n\r\n5;" + std::string(1100, 'e') +
           "\r\nhello\r\n0\r\n\r\n",
       400, "longer than 1024"},
      {kPost + "Transfer-Encoding: chunked\r\n\r\n0\r\nX-T: " + std::string(300, 't') + "\r\n\r\n",
       431, "longer than 200"},
  };
  for (const Case& c : cases) {
    for (size_t step : {0, 3}) {
      const Framed f = frame(c.raw, step);
      EXPECT_TRUE(f.done) << c.raw;
      EXPECT_EQ(f.status, c.status) << c.raw << ": " << f.message;
      EXPECT_NE(f.message.find(c.says), std::string::npos) << f.message;
    }
  }
}

TEST(RequestFramer, OneMillionHeaderLinesAreRefusedAfterTheBound) {
  std::string raw = kPost;
  while (raw.size() < 4000) raw += "X: 1\r\n";
  RequestFramer f(small_limits());
  EXPECT_TRUE(f.advance(raw));  // refused at 1024 bytes, not kept reading
  EXPECT_EQ(f.status(), 431);
}

// The Authorization field is known as soon as the head is (before any of the body), and only
// a single one counts; it stays in the request for httplib.
TEST(RequestFramer, AuthorizationIsKnownWithTheHead) {
  struct Case {
    std::string fields;
    std::optional<std::string> want;
  };
  const Case cases[] = {
      {"Authorization: Bearer k\r\n", "Bearer k"},
      {"authorization:   Bearer k  \r\n", "Bearer k"},  // any case, trimmed
      {"", std::nullopt},
      {"Authorization: Bearer x\r\nAuthorization: Bearer k\r\n", std::nullopt},
      {"X-Authorization: Bearer k\r\n", std::nullopt},
  };
  for (const Case& c : cases) {
    RequestFramer f(small_limits());
    const std::string head = "POST / HTTP/1.1\r\n" + c.fields + "Content-Length: 50\r\n\r\n";
    EXPECT_FALSE(f.advance(head));  // the body is still to come
    ASSERT_TRUE(f.head_complete());
    const std::optional<std::string_view> got = f.authorization();
    EXPECT_EQ(got ? std::optional<std::string>(std::string(*got)) : std::nullopt, c.want)
        << c.fields;
  }
  RequestFramer f(small_limits());
  EXPECT_FALSE(f.advance("GET / HTTP/1.1\r\nAuthorization: Bearer k"));
  EXPECT_FALSE(f.authorization());  // not before the head is whole
  ASSERT_TRUE(f.advance("GET / HTTP/1.1\r\nAuthorization: Bearer k\r\n\r\n"));
  EXPECT_NE(f.take_request().find("Authorization: Bearer k\r\n"), std::string::npos);
}

// The request line's method and target are known with the head (who needs a key depends on
// them); a line without them leaves them empty for httplib to refuse.
TEST(RequestFramer, MethodAndTargetAreKnownWithTheHead) {
  struct Case {
    std::string line, method, target;
  };
  const Case cases[] = {
      {"GET /health HTTP/1.1", "GET", "/health"},
      {"POST /v1/completions?x=1 HTTP/1.1", "POST", "/v1/completions?x=1"},
      {"OPTIONS * HTTP/1.1", "OPTIONS", "*"},
      {"GET /health", "GET", "/health"},
      {"GET", "", ""},
  };
  for (const Case& c : cases) {
    RequestFramer f(small_limits());
    EXPECT_FALSE(f.advance(c.line + "\r\nContent-Length: 5\r\n\r\n")) << c.line;
    ASSERT_TRUE(f.head_complete()) << c.line;
    EXPECT_EQ(f.method(), c.method) << c.line;
    EXPECT_EQ(f.target(), c.target) << c.line;
  }
}

TEST(RequestFramer, OriginIsKnownWithTheHead) {
  RequestFramer f(small_limits());
  EXPECT_FALSE(
      f.advance("GET / HTTP/1.1\r\nOrigin:  https://app.example \r\n"
                "Content-Length: 5\r\n\r\n"));
  EXPECT_EQ(f.origin(), "https://app.example");
  RequestFramer none(small_limits());
  EXPECT_TRUE(none.advance("GET / HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(none.origin(), "");
  EXPECT_TRUE(
      f.advance("GET / HTTP/1.1\r\nOrigin:  https://app.example \r\n"
                "Content-Length: 5\r\n\r\nabcde"));  // kept for httplib
  EXPECT_NE(f.take_request().find("Origin:  https://app.example \r\n"), std::string::npos);
}

}  // namespace
}  // namespace moex::serve
