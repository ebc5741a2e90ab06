// The HTTP front end of `moex serve`: OpenAI's /v1/chat/completions, /v1/completions and
// /v1/models, plus /health and /metrics (Prometheus), on cpp-httplib, feeding one Scheduler.
// Optional bearer-key authentication (every endpoint but /health, serve/http_access.h), CORS for
// the origins given, bounded requests (body, header fields, time, connections), JSON error objects
// throughout.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "serve/http_intake.h"
#include "serve/request.h"
#include "serve/scheduler.h"

namespace moex::serve {

inline constexpr size_t kDefaultMaxBodyBytes = size_t{8} << 20;

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                               // 0: a free port, chosen at bind()
  std::string api_key;                           // "": no authentication
  bool health_needs_key = false;                 // with api_key: /health needs it too
  std::vector<std::string> cors_origins;         // "*" or origins; empty: no CORS
  size_t max_body_bytes = kDefaultMaxBodyBytes;  // larger bodies: 413
  int threads = 8;                               // requests answered at once (a thread each)
  int parallel = 1;                              // the scheduler's slots, for /health
  bool verbose = false;                          // a line per request on stderr
  IntakeLimits intake;  // deadlines, header bounds, connection cap (docs/serve.md)
};

class HttpServer {
 public:
  // `scheduler` and `model` must outlive the server.
  HttpServer(Scheduler& scheduler, const ServedModel& model, HttpOptions options);
  ~HttpServer();

  // Binds host:port and returns the port (the chosen one for port 0). Throws moex::Error
  // naming the address when it cannot be bound.
  int bind();
  // Accepts and serves connections until stop(); returns once the open ones have finished.
  void serve();
  // Stops accepting and makes serve() return; safe from any thread, idempotent. Requests in
  // flight end when the scheduler cancels them (Scheduler::shutdown).
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace moex::serve
