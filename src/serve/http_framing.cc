// RequestFramer (see http_framing.h): the head split into field lines and checked, then the
// body read by its Content-Length or decoded chunk by chunk (RFC 9112 sections 5-7).
#include "serve/http_framing.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"

namespace moex::serve {
namespace {

constexpr std::string_view kCrlf = "\r\n";
constexpr size_t kMaxChunkLine = 1024;  // a chunk size with its extensions
constexpr size_t kQuoted = 60;          // bytes of a bad line quoted in a message

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(uint8_t(c)));
  return out;
}

std::string quote(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, kQuoted)) out += std::isprint(uint8_t(c)) ? c : '?';
  return str_cat("'", out, s.size() > kQuoted ? "...'" : "'");
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::string_view http_trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool http_token_char(char c) {
  return std::isalnum(uint8_t(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool RequestFramer::refuse(int status, std::string message) {
  phase_ = Phase::kRefused;
  status_ = status;
  message_ = std::move(message);
  return true;
}

std::string RequestFramer::take_request() { return std::move(request_); }

bool RequestFramer::advance(std::string_view in) {
  if (phase_ == Phase::kDone || phase_ == Phase::kRefused) return true;
  if (phase_ == Phase::kHead) {
    // Empty lines before the request line are skipped (RFC 9112 section 2.2) before the end
    // of the head is looked for: "\r\n\r\n" there would end a head with no request line.
    while (in.substr(lead_, 2) == kCrlf) lead_ += 2;
    pos_ = std::max(pos_, lead_);
    const size_t end = in.find("\r\n\r\n", pos_);
    if (end == std::string_view::npos || end + 4 > limits_.max_head_bytes) {
      if (in.size() > limits_.max_head_bytes)
        return refuse(431, str_cat("the request head (request line and header fields) is larger "
                                   "than ",
                                   limits_.max_head_bytes, " bytes"));
      pos_ = in.size() < 3 ? 0 : in.size() - 3;
      return false;
    }
    if (parse_head(in.substr(lead_, end + 2 - lead_))) return true;
    body_start_ = pos_ = end + 4;
  }
  if (phase_ == Phase::kLength) {
    if (in.size() - body_start_ < content_length_) return false;
    body_ = std::string(in.substr(body_start_, content_length_));
    consumed_ = body_start_ + content_length_;
    phase_ = Phase::kDone;
  } else if (phase_ != Phase::kDone && !chunked(in)) {
    return false;
  }
  if (phase_ == Phase::kDone) {
    request_ = std::move(head_);
    request_ += str_cat("Content-Length: ", body_.size(), "\r\n\r\n");
    request_ += body_;
    body_ = std::string();
  }
  return true;
}

// `head` starts with the request line and ends with the CRLF of its last line.
bool RequestFramer::parse_head(std::string_view head) {
  size_t fields = 0;
  bool first = true;
  while (!head.empty()) {
    const size_t eol = head.find(kCrlf);
    const std::string_view line = head.substr(0, eol);
    head.remove_prefix(eol + 2);
    if (line.find_first_of("\r\n") != std::string_view::npos)
      return refuse(400, str_cat("a bare CR or LF in the header line ", quote(line)));
    if (first) {
      if (line.empty()) return refuse(400, "the request line is empty");
      head_ = str_cat(line, kCrlf);
      const size_t sp = line.find(' ');
      if (sp != std::string_view::npos) {
        method_ = std::string(line.substr(0, sp));
        const std::string_view rest = line.substr(sp + 1);
        target_ = std::string(rest.substr(0, rest.find(' ')));
      }
      first = false;
      continue;
    }
    if (++fields > limits_.max_fields)
      return refuse(431, str_cat("more than ", limits_.max_fields, " header fields"));
    if (line.size() > limits_.max_field_bytes)
      return refuse(431, str_cat("the header field ", quote(line), " is longer than ",
                                 limits_.max_field_bytes, " bytes"));
    if (field(line)) return true;
  }
  if (have_encoding_) {
    if (have_length_)
      return refuse(400,
                    "both Transfer-Encoding and Content-Length: the body's length is "
                    "ambiguous (send one)");
    if (encoding_ != "chunked")
      return refuse(501, str_cat("Transfer-Encoding ", quote(encoding_),
                                 " is not implemented (only chunked is)"));
    phase_ = Phase::kChunkSize;
    return false;
  }
  if (have_length_ && content_length_ > limits_.max_body_bytes)
    return refuse(413, str_cat("the request body is larger than ", limits_.max_body_bytes,
                               " bytes (Content-Length: ", content_length_, ")"));
  phase_ = Phase::kLength;
  return false;
}

// One field line: checked, noted when it frames the body, kept in the rewritten head if not.
bool RequestFramer::field(std::string_view line) {
  if (line.front() == ' ' || line.front() == '\t')
    return refuse(400, str_cat("obsolete line folding in the header field ", quote(line)));
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0 ||
      !std::all_of(line.begin(), line.begin() + long(colon), http_token_char))
    return refuse(400, str_cat("malformed header field ", quote(line),
                               " (expected 'Name: value', no space before the colon)"));
  const std::string name = lower(line.substr(0, colon));
  const std::string_view value = http_trim(line.substr(colon + 1));
  if (name == "content-length") {
    std::string_view rest = value;  // a list of equal values is allowed (RFC 9110 8.6)
    while (true) {
      const std::string_view v = http_trim(rest.substr(0, rest.find(',')));
      if (!all_digits(v) || v.size() > 15)
        return refuse(400, str_cat("Content-Length ", quote(value), " is not a byte count"));
      const size_t n = std::stoull(std::string(v));
      if (have_length_ && n != content_length_)
        return refuse(400, str_cat("conflicting Content-Length values ", content_length_, " and ",
                                   n, ": the body's length is ambiguous"));
      have_length_ = true;
      content_length_ = n;
      if (rest.find(',') == std::string_view::npos) break;
      rest.remove_prefix(rest.find(',') + 1);
    }
    return false;
  }
  if (name == "transfer-encoding") {
    encoding_ += str_cat(have_encoding_ ? "," : "", lower(value));
    have_encoding_ = true;
    return false;
  }
  if (name == "authorization") {  // kept for httplib too; checked by the caller at once
    ++authorization_fields_;
    authorization_ = std::string(value);
  }
  if (name == "origin") origin_ = std::string(value);
  if (name == "expect" && lower(value) == "100-continue") {
    expect_continue_ = true;  // answered by whoever reads the connection, before the body
    return false;
  }
  head_ += str_cat(line, kCrlf);
  return false;
}

// Decodes chunks from pos_ on; true once the last chunk and the trailer section are in (or the
// body is refused), false when more bytes are needed.
bool RequestFramer::chunked(std::string_view in) {
  while (true) {
    if (phase_ == Phase::kChunkData) {
      const size_t n = std::min(chunk_left_, in.size() - pos_);
      body_.append(in.substr(pos_, n));
      pos_ += n;
      chunk_left_ -= n;
      if (chunk_left_ > 0) return false;
      phase_ = Phase::kChunkEnd;
    }
    if (phase_ == Phase::kChunkEnd) {
      if (in.size() - pos_ < 2) return false;
      if (in.substr(pos_, 2) != kCrlf) return refuse(400, "a chunk's data is not followed by CRLF");
      pos_ += 2;
      phase_ = Phase::kChunkSize;
    }
    const size_t eol = in.find(kCrlf, pos_);
    const size_t limit = phase_ == Phase::kTrailer ? limits_.max_field_bytes : kMaxChunkLine;
    // A line past the bound is refused whether its CRLF has come or not, so that the answer
    // does not depend on how the bytes arrive: without it, once the bound and a CR are passed.
    if (eol == std::string_view::npos ? in.size() - pos_ > limit + 1 : eol - pos_ > limit)
      return refuse(phase_ == Phase::kTrailer ? 431 : 400,
                    str_cat("a chunked body line is longer than ", limit, " bytes"));
    if (eol == std::string_view::npos) return false;
    const std::string_view line = in.substr(pos_, eol - pos_);
    pos_ = eol + 2;
    if (phase_ == Phase::kTrailer) {  // trailer fields are read and dropped
      if (line.empty()) {
        consumed_ = pos_;
        phase_ = Phase::kDone;
        return true;
      }
      if (++trailer_fields_ > limits_.max_fields)
        return refuse(431, str_cat("more than ", limits_.max_fields, " trailer fields"));
      continue;
    }
    const std::string_view size = http_trim(line.substr(0, line.find(';')));
    if (size.empty() || size.size() > 15 ||
        !std::all_of(size.begin(), size.end(), [](char c) { return std::isxdigit(uint8_t(c)); }))
      return refuse(400, str_cat("malformed chunk size ", quote(line)));
    const size_t n = std::stoull(std::string(size), nullptr, 16);
    if (n == 0) {
      phase_ = Phase::kTrailer;
      continue;
    }
    if (n > limits_.max_body_bytes - body_.size())
      return refuse(413, str_cat("the request body is larger than ", limits_.max_body_bytes,
                                 " bytes (chunked)"));
    chunk_left_ = n;
    phase_ = Phase::kChunkData;
  }
}

}  // namespace moex::serve
