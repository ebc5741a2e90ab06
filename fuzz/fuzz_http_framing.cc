// Fuzz target: the bytes of an HTTP/1.1 connection through serve::RequestFramer, the code that
// frames every request `moex serve` reads before httplib sees it. Input: one byte choosing how
// the bytes arrive (0: at once; k: k bytes per read), then the connection's bytes; up to
// eight pipelined requests are framed one after another. Invariants: the result does not
// depend on how the bytes arrive; a refusal is one of the statuses the framer documents, with
// a message; a taken request is its head without framing fields, one Content-Length naming
// the body's size and a body within the limit, and framing it again gives it back unchanged.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "serve/http_framing.h"

namespace {

using moex::serve::FramingLimits;
using moex::serve::RequestFramer;

// Small bounds, so that the fuzzer reaches every refusal within its input size.
FramingLimits limits() {
  FramingLimits l;
  l.max_head_bytes = 2048;
  l.max_fields = 16;
  l.max_field_bytes = 512;
  l.max_body_bytes = 2048;
  return l;
}

void fail(const std::string& what) { moex::fuzz::invariant_failed("fuzz_http_framing", what); }

struct Outcome {
  bool done = false, refused = false;
  int status = 0;
  std::string message, request;
  size_t consumed = 0;
  bool operator==(const Outcome&) const = default;
};

// Frames the start of `in`, `step` bytes per read (0: all at once).
Outcome frame(std::string_view in, size_t step, const FramingLimits& l) {
  RequestFramer f(l);
  Outcome o;
  size_t n = step ? std::min(step, in.size()) : in.size();
  while (true) {
    const bool done = f.advance(in.substr(0, n));
    if (done != (f.complete() || f.refused()))
      fail("advance() disagrees with complete()/refused()");
    if (done || n == in.size()) break;
    n = std::min(in.size(), n + step);
  }
  o.done = f.complete() || f.refused();
  if (o.done && !f.head_complete()) fail("done before the head was complete");
  if (f.refused()) {
    o.refused = true;
    o.status = f.status();
    o.message = f.message();
  } else if (f.complete()) {
    o.consumed = f.consumed();
    o.request = f.take_request();
  }
  return o;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(uint8_t(c)));
  return out;
}

void check_taken(const Outcome& o, std::string_view in, const FramingLimits& l) {
  if (o.consumed == 0 || o.consumed > in.size()) fail("consumed outside the input");
  const size_t end = o.request.find("\r\n\r\n");
  if (end == std::string::npos) fail("a taken request without the end of its head");
  const std::string head = o.request.substr(0, end + 2);
  const std::string body = o.request.substr(end + 4);
  if (body.size() > l.max_body_bytes) fail("a body past the limit was taken");
  const std::string length_line = "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  if (head.size() < length_line.size() ||
      head.compare(head.size() - length_line.size(), length_line.size(), length_line) != 0)
    fail("the head does not end with the body's Content-Length");
  const std::string h = lower(head.substr(0, head.size() - length_line.size() + 2));
  if (h.find("\r\ncontent-length:") != std::string::npos ||
      h.find("\r\ntransfer-encoding:") != std::string::npos)
    fail("a framing field was passed on");
  // Framed again (with room for the Content-Length the rewrite may have added), the request
  // is taken whole and unchanged.
  FramingLimits roomy = l;
  roomy.max_head_bytes += 64;
  roomy.max_fields += 1;
  const Outcome again = frame(o.request, 0, roomy);
  if (again.refused) fail("the rewritten request is refused: " + again.message);
  if (!again.done || again.request != o.request || again.consumed != o.request.size())
    fail("the rewritten request does not frame to itself");
}

void check_refused(const Outcome& o) {
  if (o.status != 400 && o.status != 413 && o.status != 431 && o.status != 501)
    fail("a refusal with status " + std::to_string(o.status));
  if (o.message.empty()) fail("a refusal without a message");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t step = data[0] % 17;  // 0: at once; 1..16 bytes per read
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  const FramingLimits l = limits();
  for (int request = 0; request < 8 && !in.empty(); ++request) {
    const Outcome whole = frame(in, 0, l);
    if (step != 0 && !(frame(in, step, l) == whole))
      fail("the outcome depends on how the bytes arrive");
    if (!whole.done) break;  // waiting for more bytes
    if (whole.refused) {
      check_refused(whole);
      break;  // the connection is answered and closed
    }
    check_taken(whole, in, l);
    in.remove_prefix(whole.consumed);
  }
  return 0;
}
