// The connections of `moex serve` while no handler has them: one thread polls them all, reads
// each request whole (RequestFramer) under deadlines and hands complete ones on. A slow,
// idle or oversized client costs a poll entry and its bytes, never a handler thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "serve/http_framing.h"

namespace moex::serve {

struct IntakeLimits {
  FramingLimits framing;
  std::chrono::milliseconds idle_timeout{5000};      // between requests (keep-alive)
  std::chrono::milliseconds request_timeout{10000};  // a request's first byte to its last: 408
  std::chrono::milliseconds linger{2000};            // reading and dropping after a refusal
  size_t max_connections = 256;  // open at once, handlers' included; past it the oldest held
                                 // here is closed, or the new one refused (503) if none is
  // Request bytes held at once, unfinished ones here and whole ones waiting for or in a
  // handler: past it, bodies are read no further until there is room.
  size_t max_buffered_bytes = size_t{64} << 20;
  // Not empty: the Authorization value every request must carry ("Bearer KEY"). It is checked
  // as soon as the head is in, so a request without it is answered 401 before its body is
  // read (and the connection closed, as after any refusal here).
  std::string authorization;
  // With `authorization`: the requests that need no key, by the method and path (the target
  // less its query) of the request line (serve/http_access.h). Empty: every request needs it.
  std::function<bool(std::string_view method, std::string_view path)> open_without_key;
  // Header lines ("Name: value\r\n" each) added to a refusal answered here, given the
  // request's Origin field ("" when none or the head is not whole): the CORS fields, so that
  // a browser lets its page read the error. Empty: none.
  std::function<std::string(std::string_view origin)> refusal_fields;
};

// A complete request for a handler; the connection goes back with Intake::finish.
struct IntakeRequest {
  int fd = -1;
  std::string request;  // as RequestFramer::take_request gives it
  std::string rest;     // bytes received after it (pipelined requests)
  size_t served = 0;    // requests answered before on this connection
  size_t bytes = 0;     // what it counts against max_buffered_bytes until finish()
};

class Intake {
 public:
  using Dispatch = std::function<void(IntakeRequest)>;
  // The body of an error answered here (413, 431, 408, ...): status, message -> JSON text.
  using ErrorBody = std::function<std::string(int, const std::string&)>;
  Intake(const IntakeLimits& limits, Dispatch dispatch, ErrorBody error_body);
  ~Intake();  // stop()
  Intake(const Intake&) = delete;
  Intake& operator=(const Intake&) = delete;

  // A newly accepted connection (any thread). After stop() it is closed at once.
  void add(int fd);
  // A handler is done with a connection: `keep` returns it here to wait for its next request
  // (`rest` holds bytes already read past the last one), else it is closed.
  void finish(IntakeRequest r, bool keep);
  // Closes every connection held here and any handed back later; the thread ends.
  void stop();
  size_t open_connections() const;

 private:
  struct Conn;
  void run();
  void read_from(Conn& c);
  void frame(Conn& c);
  void refuse(Conn& c, int status, const std::string& message);
  void close_conn(std::list<Conn>::iterator it);
  void take_new();

  IntakeLimits limits_;
  Dispatch dispatch_;
  ErrorBody error_body_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Conn>> incoming_;  // added or handed back, not yet polled
  size_t open_ = 0;                              // connections open: here and in handlers
  bool stopping_ = false;
  int wake_fd_ = -1;                    // an eventfd that interrupts poll
  std::list<Conn> held_;                // the poll thread's own
  size_t buffered_ = 0;                 // bytes in held_'s buffers
  std::atomic<size_t> in_handlers_{0};  // IntakeRequest::bytes handed on, not yet finished
  std::thread thread_;
};

}  // namespace moex::serve
