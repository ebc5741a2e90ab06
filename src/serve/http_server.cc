// HttpServer (see http_server.h): routes, authentication, error objects for what httplib
// answers itself (404, 413), the server's lifecycle: connections read by an Intake, requests
// answered by a pool of handler threads.
#include "serve/http_server.h"

#include <httplib.h>
#include <malloc.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "serve/http_access.h"
#include "serve/http_completion.h"
#include "serve/http_front.h"
#include "serve/http_intake.h"
#include "serve/metrics.h"
#include "serve/response.h"

namespace moex::serve {
namespace {

// Equal strings in time that does not depend on where they differ.
bool same_key(const std::string& a, const std::string& b) {
  size_t diff = a.size() ^ b.size();
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) diff |= uint8_t(a[i] ^ b[i]);
  return diff == 0;
}

const char* error_type(int status) {
  switch (status) {
    case 401:
      return "authentication_error";
    case 404:
      return "not_found_error";
    case 405:
      return "invalid_request_error";
    case 413:
      return "invalid_request_error";
    default:
      return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

// httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, fixed when the library was
// built): a burst of connections while the decode threads hold the cores overflows it and
// each extra client waits a SYN retransmit (1 s, measured). listen() again on the bound
// socket raises it; the kernel caps it at net.core.somaxconn.
constexpr int kListenBacklog = 512;
// Requests answered on one connection before it is closed (httplib's own default is 5).
constexpr size_t kMaxRequestsPerConnection = 100;
constexpr std::chrono::milliseconds kWriteTimeout{5000};
// A request at least this large has its handler return the freed memory to the system after
// it (malloc_trim): its body and JSON would otherwise stay resident in that thread's arena.
constexpr size_t kTrimAfterBytes = size_t{1} << 20;

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct HttpServer::Impl {
  Impl(Scheduler& s, const ServedModel& m, HttpOptions o)
      : scheduler(s),
        model(m),
        opt(std::move(o)),
        access({.api_key = opt.api_key,
                .health_needs_key = opt.health_needs_key,
                .cors_origins = opt.cors_origins}),
        completions{s, m, opt.verbose, &metrics} {}
  ~Impl() { stop_handlers(); }

  void routes();
  void start_handlers();
  void answer(IntakeRequest r);
  void stop_handlers();
  void preflight(const httplib::Request& req, httplib::Response& res) const;
  bool authorized(const httplib::Request& req) const {
    const std::string want = "Bearer " + opt.api_key;
    return same_key(req.get_header_value("Authorization"), want);
  }

  Scheduler& scheduler;
  const ServedModel& model;
  HttpOptions opt;
  Access access;
  Metrics metrics;
  CompletionContext completions;
  int64_t started = unix_now();
  FrontServer http;
  std::unique_ptr<httplib::ThreadPool> handlers;
  std::unique_ptr<Intake> intake;
  std::atomic<bool> draining{false};
  std::mutex mu;
  std::condition_variable cv;
  bool serving = false, stopping = false, finished = false, stop_sent = false;
};

void HttpServer::Impl::start_handlers() {
  handlers = std::make_unique<httplib::ThreadPool>(size_t(std::max(1, opt.threads)));
  IntakeLimits limits = opt.intake;
  limits.framing.max_body_bytes = opt.max_body_bytes;
  // The intake answers 401 as soon as a head without the key is in (the pre-routing handler
  // below checks again, as httplib sees the request).
  if (!opt.api_key.empty()) limits.authorization = "Bearer " + opt.api_key;
  limits.open_without_key = [this](std::string_view method, std::string_view path) {
    return !access.needs_key(method, path);
  };
  limits.refusal_fields = [this](std::string_view origin) {
    return header_lines(access.cors_fields(origin));
  };
  // Every handler's connection counts: room for each and as many waiting for their turn.
  limits.max_connections = std::max(limits.max_connections, 2 * size_t(std::max(1, opt.threads)));
  intake = std::make_unique<Intake>(
      limits,
      [this](IntakeRequest r) {
        auto shared = std::make_shared<IntakeRequest>(std::move(r));
        handlers->enqueue([this, shared] { answer(std::move(*shared)); });
      },
      [](int status, const std::string& message) {
        return json_text(error_json(message, error_type(status), ""));
      });
  http.attach(intake.get());
  // The accept loop's tasks only hand each socket to the intake.
  http.new_task_queue = [] { return new httplib::ThreadPool(2); };
}

void HttpServer::Impl::answer(IntakeRequest r) {
  const bool last = r.served + 1 >= kMaxRequestsPerConnection || draining.load();
  const bool keep = http.answer(r, last, kWriteTimeout) && !draining.load();
  const bool large = r.request.size() >= kTrimAfterBytes;
  r.request = std::string();
  ++r.served;
  intake->finish(std::move(r), keep);
  if (large) malloc_trim(0);
}

// After the accept loop has ended: connections waiting for a request are closed, requests
// being answered finish (the scheduler cancels what runs), then their connections close.
void HttpServer::Impl::stop_handlers() {
  draining.store(true);
  if (intake) intake->stop();
  if (handlers) handlers->shutdown();
  handlers.reset();
  intake.reset();
}

// CORS on: OPTIONS is a browser's preflight, answered for any path without the key.
void HttpServer::Impl::preflight(const httplib::Request& req, httplib::Response& res) const {
  const std::string origin = req.get_header_value("Origin");
  if (origin.empty()) {  // not a browser's: what the server takes
    res.status = 204;
    res.set_header("Allow", "GET, POST, OPTIONS");
    return;
  }
  if (!access.origin_allowed(origin)) {
    set_error(res, 403, "permission_error", "",
              str_cat("the origin '", origin, "' is not allowed (--cors-origin)"));
    return;
  }
  res.status = 204;
  for (const auto& [name, value] :
       access.preflight_fields(origin, req.get_header_value("Access-Control-Request-Headers")))
    res.set_header(name, value);
}

void HttpServer::Impl::routes() {
  start_handlers();
  http.set_keep_alive_timeout(std::max<time_t>(1, opt.intake.idle_timeout.count() / 1000));
  http.set_keep_alive_max_count(kMaxRequestsPerConnection);
  http.set_payload_max_length(opt.max_body_bytes);
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (access.cors() && req.method == "OPTIONS") {
      preflight(req, res);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!access.needs_key(req.method, req.path) || authorized(req))
      return httplib::Server::HandlerResponse::Unhandled;
    res.set_header("WWW-Authenticate", "Bearer");
    set_error(res, 401, "authentication_error", "",
              "a valid API key is needed: send the header 'Authorization: Bearer KEY'");
    return httplib::Server::HandlerResponse::Handled;
  });
  // Every other answer (errors and streams included) gets the CORS fields of its origin.
  http.set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (access.cors() && req.method == "OPTIONS") return;  // the preflight set its own
    for (const auto& [name, value] : access.cors_fields(req.get_header_value("Origin")))
      res.set_header(name, value);
  });
  http.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    handle_completion(completions, Api::kChat, req, res);
  });
  http.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    handle_completion(completions, Api::kCompletion, req, res);
  });
  for (const char* path : {"/v1/chat/completions", "/v1/completions"})
    http.Get(path, [path](const httplib::Request&, httplib::Response& res) {
      res.set_header("Allow", "POST");
      set_error(res, 405, "invalid_request_error", "", str_cat(path, " takes POST"));
    });
  http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(json_text(models_json(model.name, started)), "application/json");
  });
  http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    const SchedulerStats s = scheduler.stats();
    const ojson j = {{"status", "ok"},
                     {"model", model.name},
                     {"slots_total", opt.parallel},
                     {"slots_busy", s.active},
                     {"slots_idle", opt.parallel - s.active},
                     {"queued", s.queued},
                     {"requests_completed", s.completed},
                     {"requests_cancelled", s.cancelled},
                     {"requests_rejected", s.rejected}};
    res.set_content(json_text(j), "application/json");
  });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    const SchedulerStats s = scheduler.stats();
    res.set_content(metrics.exposition({.slots_total = opt.parallel,
                                        .slots_busy = s.active,
                                        .queued = s.queued,
                                        .rejected = s.rejected,
                                        .cached_tokens = s.cached_tokens,
                                        .cache_hits = s.prompt_cache.hits,
                                        .cache_misses = s.prompt_cache.misses,
                                        .cache_hit_tokens = s.prompt_cache.hit_tokens,
                                        .cache_evictions = s.prompt_cache.evictions,
                                        .cache_bytes = s.prompt_cache.bytes,
                                        .cache_entries = s.prompt_cache.entries,
                                        .cache_budget_bytes = s.prompt_cache.budget_bytes,
                                        .spec_drafted = s.spec_drafted,
                                        .spec_accepted = s.spec_accepted,
                                        .spec_reruns = s.spec_reruns}),
                    kMetricsContentType);
  });
  // What httplib answers itself (no route: 404; body too large: 413) gets an error object too.
  // httplib reads a form-encoded body (curl -d without a Content-Type) as form fields, which
  // it bounds to 8 KiB: that 413 says what to send instead.
  const size_t max_body = opt.max_body_bytes;
  http.set_error_handler(httplib::Server::HandlerWithResponse(
      [max_body](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        const bool form =
            req.get_header_value("Content-Type").rfind("application/x-www-form-urlencoded", 0) == 0;
        const std::string message =
            res.status == 404 ? str_cat("no such endpoint: ", req.method, " ", req.path)
            : res.status == 413 && form
                ? std::string(
                      "a form-encoded body is limited to 8 KiB: send the JSON with "
                      "'Content-Type: application/json'")
            : res.status == 413 ? str_cat("the request body is larger than ", max_body, " bytes")
                                : str_cat("HTTP ", res.status);
        set_error(res, res.status, error_type(res.status), "", message);
        return httplib::Server::HandlerResponse::Handled;
      }));
  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "internal error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        set_error(res, 500, "server_error", "", what);
      });
  if (opt.verbose)
    http.set_logger([](const httplib::Request& req, const httplib::Response& res) {
      std::fprintf(stderr, "moex serve: %s %s %d\n", req.method.c_str(), req.path.c_str(),
                   res.status);
    });
}

HttpServer::HttpServer(Scheduler& scheduler, const ServedModel& model, HttpOptions options)
    : impl_(std::make_unique<Impl>(scheduler, model, std::move(options))) {
  impl_->routes();
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind() {
  Impl& s = *impl_;
  const int port = s.opt.port == 0
                       ? s.http.bind_to_any_port(s.opt.host)
                       : (s.http.bind_to_port(s.opt.host, s.opt.port) ? s.opt.port : -1);
  if (port < 0)
    fail("moex serve: cannot listen on ", s.opt.host, ":", s.opt.port,
         " (address in use, not local, or not permitted)");
  s.http.raise_backlog(kListenBacklog);
  return port;
}

void HttpServer::serve() {
  Impl& s = *impl_;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.stopping) return;
    s.serving = true;
  }
  s.http.listen_after_bind();
  s.stop_handlers();
  std::lock_guard<std::mutex> lock(s.mu);
  s.finished = true;
  s.cv.notify_all();
}

void HttpServer::stop() {
  Impl& s = *impl_;
  std::unique_lock<std::mutex> lock(s.mu);
  s.stopping = true;
  // httplib's stop() does nothing before its accept loop runs, and must be called once.
  while (s.serving && !s.finished && !s.http.is_running())
    s.cv.wait_for(lock, std::chrono::milliseconds(10));
  if (s.serving && !s.finished && !s.stop_sent) {
    s.stop_sent = true;
    s.http.stop();
  }
  while (s.serving && !s.finished) s.cv.wait(lock);
}

}  // namespace moex::serve
