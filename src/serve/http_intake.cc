// Intake (see http_intake.h): a poll loop over the held connections; non-blocking reads into
// each one's buffer; deadlines checked every turn; errors answered here with Connection: close,
// then the connection read and dropped for a moment so the client sees the answer, not a reset.
#include "serve/http_intake.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <string_view>

#include "core/error.h"
#include "serve/http_access.h"

namespace moex::serve {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kReadChunk = size_t{64} << 10;
constexpr int kReadsPerTurn = 4;  // 256 KiB from one connection per turn: the others get theirs

const char* reason(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

// Equal strings in time that does not depend on where they differ (an API key).
bool same_secret(std::string_view a, std::string_view b) {
  size_t diff = a.size() ^ b.size();
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) diff |= uint8_t(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

struct Intake::Conn {
  Conn(int f, const FramingLimits& l) : fd(f), framer(l) {}
  int fd;
  std::string buf;  // bytes of the request under way (and any after it)
  RequestFramer framer;
  size_t served = 0;
  Clock::time_point since = Clock::now();  // idle: since when; in a request: its first byte
  bool continue_sent = false;
  bool lingering = false;  // refused: reading and dropping until the deadline or EOF
  bool gone = false;       // closed or handed to a handler: removed at the end of the turn
  bool in_request() const { return !buf.empty(); }
};

Intake::Intake(const IntakeLimits& limits, Dispatch dispatch, ErrorBody error_body)
    : limits_(limits), dispatch_(std::move(dispatch)), error_body_(std::move(error_body)) {
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) fail("moex serve: eventfd failed (connection intake)");
  thread_ = std::thread([this] { run(); });
}

Intake::~Intake() {
  stop();
  close(wake_fd_);
}

void Intake::add(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) {
    close(fd);
    return;
  }
  ++open_;
  incoming_.push_back(std::make_unique<Conn>(fd, limits_.framing));
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
}

void Intake::finish(IntakeRequest r, bool keep) {
  std::lock_guard<std::mutex> lock(mu_);
  in_handlers_ -= r.bytes;
  const uint64_t one = 1;
  if (!keep || stopping_) {
    close(r.fd);
    --open_;
    (void)!write(wake_fd_, &one, sizeof one);  // paused bodies may go on
    return;
  }
  auto c = std::make_unique<Conn>(r.fd, limits_.framing);
  c->buf = std::move(r.rest);
  c->served = r.served;
  incoming_.push_back(std::move(c));
  (void)!write(wake_fd_, &one, sizeof one);
}

void Intake::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    const uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
}

size_t Intake::open_connections() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_;
}

void Intake::close_conn(std::list<Conn>::iterator it) {
  if (it->gone) return;
  buffered_ -= it->buf.size();
  close(it->fd);
  it->gone = true;
  std::lock_guard<std::mutex> lock(mu_);
  --open_;
}

// Answers `status` and closes the sending side; what the client still sends is read and dropped
// until it closes or `linger` passes (closing at once could reset the answer away).
void Intake::refuse(Conn& c, int status, const std::string& message) {
  const std::string body = error_body_(status, message);
  const std::string fields =
      limits_.refusal_fields
          ? limits_.refusal_fields(c.framer.head_complete() ? c.framer.origin() : "")
          : "";
  const std::string response = str_cat(
      "HTTP/1.1 ", status, " ", reason(status), status == 401 ? "\r\nWWW-Authenticate: Bearer" : "",
      "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: ", body.size(),
      "\r\n", fields, "\r\n", body);
  (void)!send(c.fd, response.data(), response.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  shutdown(c.fd, SHUT_WR);
  buffered_ -= c.buf.size();
  c.buf = std::string();
  c.lingering = true;
  c.since = Clock::now();
}

void Intake::frame(Conn& c) {
  const bool done = c.framer.advance(c.buf);
  if (done && c.framer.refused()) return refuse(c, c.framer.status(), c.framer.message());
  // The key is checked once the head is in, before any of the body is waited for.
  if (c.framer.head_complete() && !limits_.authorization.empty() &&
      !(limits_.open_without_key &&
        limits_.open_without_key(c.framer.method(), target_path(c.framer.target())))) {
    const std::optional<std::string_view> given = c.framer.authorization();
    if (!given || !same_secret(*given, limits_.authorization))
      return refuse(c, 401,
                    "a valid API key is needed: send the header 'Authorization: Bearer KEY'");
  }
  if (!done) {
    if (c.framer.head_complete() && c.framer.expects_continue() && !c.continue_sent) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      (void)!send(c.fd, kContinue.data(), kContinue.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      c.continue_sent = true;
    }
    return;
  }
  IntakeRequest r;
  r.fd = c.fd;
  r.request = c.framer.take_request();
  r.rest = c.buf.substr(c.framer.consumed());
  r.served = c.served;
  r.bytes = r.request.size();
  in_handlers_ += r.bytes;
  buffered_ -= c.buf.size();
  c.buf = std::string();
  c.gone = true;
  dispatch_(std::move(r));
}

void Intake::read_from(Conn& c) {
  char chunk[kReadChunk];
  for (int i = 0; i < kReadsPerTurn && !c.gone; ++i) {
    const ssize_t n = recv(c.fd, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n <= 0) {  // the client has gone (or closed its side before finishing a request)
      c.lingering = true;
      c.since = Clock::time_point{};  // closed at the deadline check of this turn
      return;
    }
    if (c.lingering) continue;
    if (c.buf.empty()) c.since = Clock::now();
    c.buf.append(chunk, size_t(n));
    buffered_ += size_t(n);
    frame(c);
  }
}

// Moves added and handed-back connections into held_, applying the connection cap.
void Intake::take_new() {
  std::vector<std::unique_ptr<Conn>> fresh;
  size_t open = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fresh.swap(incoming_);
    open = open_;
  }
  for (auto& c : fresh) {
    held_.push_back(std::move(*c));
    Conn& h = held_.back();
    buffered_ += h.buf.size();
    if (h.in_request()) frame(h);  // pipelined bytes may hold a whole request
  }
  while (open > limits_.max_connections) {
    auto victim = held_.end();
    for (auto it = held_.begin(); it != held_.end(); ++it) {
      if (it->gone || it->lingering) continue;
      if (victim == held_.end() ||
          std::pair(it->in_request(), it->since) < std::pair(victim->in_request(), victim->since))
        victim = it;
    }
    if (victim == held_.end() || victim->fd == held_.back().fd) {
      if (!held_.empty() && !held_.back().gone && !held_.back().lingering)
        refuse(held_.back(), 503,
               str_cat("more than ", limits_.max_connections,
                       " connections are open; try again shortly"));
      break;
    }
    close_conn(victim);
    --open;
  }
}

void Intake::run() {
  std::vector<pollfd> fds;
  std::vector<std::list<Conn>::iterator> of;
  while (true) {
    take_new();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) break;
    }
    const Clock::time_point now = Clock::now();
    Clock::duration wait = std::chrono::seconds(1);
    for (auto it = held_.begin(); it != held_.end(); ++it) {
      const Clock::duration limit = it->lingering      ? limits_.linger
                                    : it->in_request() ? limits_.request_timeout
                                                       : limits_.idle_timeout;
      if (now - it->since < limit) {
        wait = std::min(wait, it->since + limit - now);
        continue;
      }
      if (it->in_request() && !it->lingering)
        refuse(*it, 408,
               str_cat("the request was not received whole within ",
                       limits_.request_timeout.count(), " ms"));
      else
        close_conn(it);
    }
    held_.remove_if([](const Conn& c) { return c.gone; });
    fds.assign(1, pollfd{wake_fd_, POLLIN, 0});
    of.clear();
    const bool full = buffered_ + in_handlers_.load() >= limits_.max_buffered_bytes;
    for (auto it = held_.begin(); it != held_.end(); ++it) {
      const bool paused = full && it->framer.head_complete() && !it->lingering;
      fds.push_back(pollfd{it->fd, short(paused ? 0 : POLLIN), 0});
      of.push_back(it);
    }
    const int ms = int(std::chrono::ceil<std::chrono::milliseconds>(wait).count());
    if (poll(fds.data(), fds.size(), std::max(ms, 1)) < 0 && errno != EINTR)
      fail("moex serve: poll failed (connection intake)");
    if (fds[0].revents & POLLIN) {
      uint64_t n;
      (void)!read(wake_fd_, &n, sizeof n);
    }
    for (size_t i = 1; i < fds.size(); ++i)
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) read_from(*of[i - 1]);
    held_.remove_if([](const Conn& c) { return c.gone; });
  }
  for (auto it = held_.begin(); it != held_.end(); ++it) close_conn(it);
  held_.clear();
}

}  // namespace moex::serve
