// POST /v1/chat/completions and /v1/completions: the body parsed, the request submitted to
// the scheduler, and its tokens answered as one JSON object or as server-sent events. A stop
// string or a client that has gone cancels the request's stream. Internal to the HTTP layer.
#pragma once

#include <httplib.h>

#include "serve/metrics.h"
#include "serve/request.h"
#include "serve/scheduler.h"

namespace moex::serve {

struct CompletionContext {
  Scheduler& scheduler;
  const ServedModel& model;
  bool verbose = false;        // a line per request on stderr
  Metrics* metrics = nullptr;  // null: nothing counted
};

void handle_completion(const CompletionContext& ctx, Api api, const httplib::Request& req,
                       httplib::Response& res);

// Sets `res` to an OpenAI error object with `status` (`code` "": null).
void set_error(httplib::Response& res, int status, const std::string& type,
               const std::string& param, const std::string& message, const std::string& code = "");

}  // namespace moex::serve
