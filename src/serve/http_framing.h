// Reads one HTTP/1.1 request off a connection's bytes before httplib sees it, with bounds
// httplib 0.11 lacks: header count and size, one unambiguous Content-Length, the body limit
// whatever its framing (a chunked body is decoded here and handed on with a Content-Length).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace moex::serve {

struct FramingLimits {
  size_t max_head_bytes = size_t{64} << 10;  // request line and header fields: 431 past it
  size_t max_fields = 100;                   // header fields (chunked trailers too): 431
  size_t max_field_bytes = 8192;             // one field line (httplib's own bound): 431
  size_t max_body_bytes = size_t{8} << 20;   // the body as the handler gets it: 413
};

class RequestFramer {
 public:
  explicit RequestFramer(const FramingLimits& limits) : limits_(limits) {}

  // Advances over `in`: every byte received since the previous request ended, of which each
  // call's `in` extends the last one's (the work already done is kept). True once the request
  // is complete or refused.
  bool advance(std::string_view in);

  bool head_complete() const { return phase_ != Phase::kHead; }
  bool complete() const { return phase_ == Phase::kDone; }
  bool refused() const { return phase_ == Phase::kRefused; }
  // The head asked for "Expect: 100-continue" (the interim answer is the caller's to send).
  bool expects_continue() const { return expect_continue_; }
  // Once the head is complete: the value of its Authorization field (trimmed), nullopt when
  // there is none or more than one (two credentials are no credential).
  std::optional<std::string_view> authorization() const {
    if (authorization_fields_ != 1) return std::nullopt;
    return std::string_view(authorization_);
  }
  // Once the head is complete: the request line's method and target ("" when the line has
  // fewer parts; httplib judges the line).
  std::string_view method() const { return method_; }
  std::string_view target() const { return target_; }
  // Once the head is complete: its (last) Origin field, "" when none (CORS answers need it).
  std::string_view origin() const { return origin_; }

  // Refused: the status (400, 413, 431, 501) and what was wrong.
  int status() const { return status_; }
  const std::string& message() const { return message_; }

  // Complete: the bytes of `in` that formed the request, and the request as httplib is to
  // read it: the head without Transfer-Encoding, Content-Length and Expect, one
  // "Content-Length: N", then the decoded body. take_request() moves it out.
  size_t consumed() const { return consumed_; }
  std::string take_request();

 private:
  enum class Phase { kHead, kLength, kChunkSize, kChunkData, kChunkEnd, kTrailer, kDone, kRefused };
  bool refuse(int status, std::string message);
  bool parse_head(std::string_view head);
  bool field(std::string_view line);
  bool chunked(std::string_view in);

  FramingLimits limits_;
  Phase phase_ = Phase::kHead;
  size_t pos_ = 0;  // kHead: where the search for the blank line resumes; else the next byte
  size_t lead_ = 0;  // kHead: the empty lines before the request line
  size_t body_start_ = 0, content_length_ = 0, chunk_left_ = 0, trailer_fields_ = 0;
  bool have_length_ = false, have_encoding_ = false, expect_continue_ = false;
  size_t authorization_fields_ = 0;
  std::string authorization_;  // the last Authorization field's value
  std::string method_, target_, origin_;
  std::string encoding_;  // Transfer-Encoding, lower case, its fields joined with ','
  std::string head_;      // rewritten: request line and the fields kept, each with CRLF
  std::string body_;      // chunked: decoded so far
  std::string request_;
  size_t consumed_ = 0;
  int status_ = 0;
  std::string message_;
};

// RFC 9110 token characters (a header field name, a method).
bool http_token_char(char c);
// s without the optional white space (spaces, tabs) at either end.
std::string_view http_trim(std::string_view s);

}  // namespace moex::serve
