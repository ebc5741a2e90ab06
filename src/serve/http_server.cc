// HttpServer (see http_server.h): routes, authentication, error objects for what httplib
// answers itself (404, 413), the server's lifecycle.
#include "serve/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "serve/http_completion.h"
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

class BacklogServer : public httplib::Server {
 public:
  void raise_backlog() {
    if (svr_sock_ != INVALID_SOCKET) ::listen(svr_sock_, kListenBacklog);
  }
};

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct HttpServer::Impl {
  Impl(Scheduler& s, const ServedModel& m, HttpOptions o)
      : scheduler(s), model(m), opt(std::move(o)), completions{s, m, opt.verbose} {}

  void routes();
  bool authorized(const httplib::Request& req) const {
    const std::string want = "Bearer " + opt.api_key;
    return same_key(req.get_header_value("Authorization"), want);
  }

  Scheduler& scheduler;
  const ServedModel& model;
  HttpOptions opt;
  CompletionContext completions;
  int64_t started = unix_now();
  BacklogServer http;
  std::mutex mu;
  std::condition_variable cv;
  bool serving = false, stopping = false, finished = false, stop_sent = false;
};

void HttpServer::Impl::routes() {
  const size_t threads = size_t(std::max(1, opt.threads));
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http.set_payload_max_length(opt.max_body_bytes);
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (opt.api_key.empty() || authorized(req)) return httplib::Server::HandlerResponse::Unhandled;
    res.set_header("WWW-Authenticate", "Bearer");
    set_error(res, 401, "authentication_error", "",
              "a valid API key is needed: send the header 'Authorization: Bearer KEY'");
    return httplib::Server::HandlerResponse::Handled;
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
  s.http.raise_backlog();
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
