// The completion endpoints (see http_completion.h): a Run follows one request's stream to its
// outcome; the non-streaming handler collects it into one object, the streaming one writes
// each piece as a server-sent event from httplib's chunked content provider.
#include "serve/http_completion.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "serve/api_error.h"
#include "serve/chat_answer.h"
#include "serve/completion_text.h"
#include "serve/http_connection.h"
#include "serve/response.h"

namespace moex::serve {
namespace {

using std::chrono::milliseconds;
// How often a waiting handler looks at its connection.
constexpr milliseconds kPollInterval{100};
// Status recorded (never sent: nobody reads it) when the client went away; nginx's code.
constexpr int kClientClosed = 499;

struct Outcome {
  enum Kind { kRunning, kDone, kFailed } kind = kRunning;
  std::string finish_reason;  // kDone: "stop" or "length"
  int status = 0;             // kFailed
  std::string type, message;  // kFailed
};

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// One submitted request followed to its outcome. Destroying it before the outcome cancels
// the request (the client has gone, or httplib dropped the response).
class Run {
 public:
  Run(const CompletionContext& ctx, ApiRequest request, std::shared_ptr<RequestStream> stream,
      ConnectionWatch watch, Clock::time_point arrived)
      : ctx_(ctx),
        request_(std::move(request)),
        stream_(std::move(stream)),
        watch_(watch),
        text_(*ctx.model.tokenizer, request_.stop, request_.generation.logprobs,
              request_.chat_output ? &*request_.chat_output : nullptr),
        meta_(new_response_meta(request_.api,
                                request_.model.empty() ? ctx.model.name : request_.model)) {
    meta_.tokens_as_ids = request_.tokens_as_ids;
    if (ctx.model.test_replies) reply_ = &ctx.model.test_replies->take();
    t0_ = arrived;
  }
  // Counted and logged here, once the response is written (or dropped).
  ~Run() {
    if (outcome_.kind == Outcome::kRunning) {  // httplib dropped the response: the client left
      stream_->cancel();
      outcome_.kind = Outcome::kFailed;
      outcome_.status = kClientClosed;
      outcome_.message = "the client closed the connection";
    }
    try {
      report();
    } catch (...) {  // counting and logging must not end the handler
    }
  }
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  // Waits up to `wait` for the next event and returns the text and logprobs it adds.
  CompletionText::Delta step(milliseconds wait) {
    CompletionText::Delta d;
    if (!running()) return d;
    if (watch_.closed()) {
      client_gone();
      return d;
    }
    RequestStream::Event ev;
    if (!stream_->next(ev, wait)) return d;
    if (ev.cached_tokens > 0) cached_tokens_ = ev.cached_tokens;
    if (reply_) replace_with_reply(ev);
    time_tokens(ev.tokens);
    d = text_.add(ev.tokens);
    if (text_.stopped()) {  // a stop string: what the scheduler still makes is not wanted
      stream_->cancel();
      CompletionText::Delta rest = text_.finish();
      d.text += rest.text;
      for (auto& e : rest.events) d.events.push_back(std::move(e));
      end("stop");
      return d;
    }
    switch (ev.finish) {
      case Finish::kNone:
        return d;
      case Finish::kStop:
      case Finish::kLength:
      case Finish::kContext: {
        CompletionText::Delta rest = text_.finish();
        d.text += rest.text;
        for (auto& e : rest.events) d.events.push_back(std::move(e));
        if (text_.stopped()) {
          end("stop");  // a stop string in the text held back until the end
        } else {
          end(ev.finish == Finish::kStop ? "stop" : "length");
        }
        return d;
      }
      case Finish::kCancelled:  // not by this run: the scheduler is shutting down
        fail(503, "server_error", "the server is shutting down");
        return d;
      case Finish::kError:
        fail(500, "server_error", ev.error.empty() ? "generation failed" : ev.error);
        return d;
    }
    return d;
  }

  void client_gone() {
    if (!running()) return;
    stream_->cancel();
    fail(kClientClosed, "", "the client closed the connection");
  }

  // The finish reason the response gave (tool_calls for a chat answer with calls).
  void set_finish_reason(std::string reason) { answered_reason_ = std::move(reason); }
  bool running() const { return outcome_.kind == Outcome::kRunning; }
  const Outcome& outcome() const { return outcome_; }
  const ApiRequest& request() const { return request_; }
  const ResponseMeta& meta() const { return meta_; }
  Usage usage() const {
    return {int64_t(request_.generation.prompt.size()), text_.tokens(), cached_tokens_};
  }

 private:
  // The test hook: the model's ids replaced by the reply's; the reply's end is the model's stop.
  void replace_with_reply(RequestStream::Event& ev) {
    std::vector<GeneratedToken> out;
    for (GeneratedToken t : ev.tokens) {
      if (replied_ >= reply_->size()) break;
      t.id = (*reply_)[replied_++];
      out.push_back(std::move(t));
    }
    ev.tokens = std::move(out);
    if (replied_ >= reply_->size() && ev.finish == Finish::kNone) {
      stream_->cancel();
      ev.finish = Finish::kStop;
    }
  }

  // Time to first token and between tokens, from when each was sampled.
  void time_tokens(const std::vector<GeneratedToken>& tokens) {
    for (const GeneratedToken& t : tokens) {
      if (!first_at_) {
        first_at_ = t.at;
        if (ctx_.metrics) ctx_.metrics->first_token(seconds(t.at - t0_));
      } else if (ctx_.metrics) {
        ctx_.metrics->inter_token(seconds(t.at - last_at_));
      }
      last_at_ = t.at;
    }
  }
  void end(const char* reason) {
    outcome_.kind = Outcome::kDone;
    outcome_.finish_reason = reason;
  }
  void fail(int status, const char* type, std::string message) {
    outcome_.kind = Outcome::kFailed;
    outcome_.status = status;
    outcome_.type = type;
    outcome_.message = std::move(message);
  }
  // The request's outcome into the metrics and, with -v, one line: id, tokens, time to first
  // token, decode rate (tokens after the first over the time since it), duration, finish.
  void report() const {
    const Usage u = usage();
    const double total = seconds(Clock::now() - t0_);
    const std::string reason =
        outcome_.kind != Outcome::kDone
            ? (outcome_.status == kClientClosed || outcome_.status == 503 ? "cancelled" : "error")
        : answered_reason_.empty() ? outcome_.finish_reason
                                   : answered_reason_;
    if (ctx_.metrics)
      ctx_.metrics->request_done({.finish_reason = reason,
                                  .prompt_tokens = u.prompt_tokens,
                                  .completion_tokens = u.completion_tokens,
                                  .seconds = total});
    if (!ctx_.verbose) return;
    char ttft[32] = "-", rate[32] = "-";
    if (first_at_) {
      std::snprintf(ttft, sizeof ttft, "%.3f s", seconds(*first_at_ - t0_));
      const double span = seconds(last_at_ - *first_at_);
      if (u.completion_tokens > 1 && span > 0)
        std::snprintf(rate, sizeof rate, "%.1f", double(u.completion_tokens - 1) / span);
    }
    std::fprintf(stderr,
                 "moex serve: %s %s: prompt %lld tokens (%lld cached), %lld generated, TTFT %s, "
                 "%s tok/s, %.3f s, %s%s%s\n",
                 meta_.id.c_str(), request_.stream ? "streamed" : "whole",
                 (long long)u.prompt_tokens, (long long)u.cached_tokens,
                 (long long)u.completion_tokens, ttft, rate, total, reason.c_str(),
                 outcome_.kind == Outcome::kDone ? "" : ": ",
                 outcome_.kind == Outcome::kDone ? "" : outcome_.message.c_str());
  }

  const CompletionContext& ctx_;
  ApiRequest request_;
  std::shared_ptr<RequestStream> stream_;
  ConnectionWatch watch_;
  CompletionText text_;
  ResponseMeta meta_;
  Outcome outcome_;
  int64_t cached_tokens_ = 0;
  const std::vector<int32_t>* reply_ = nullptr;  // the test hook's reply (ServedModel)
  size_t replied_ = 0;
  Clock::time_point t0_;                       // the handler took the request
  std::optional<Clock::time_point> first_at_;  // the first token's sampling
  Clock::time_point last_at_;                  // the last token's
  std::string answered_reason_;
};

void append(std::vector<LogprobEntry>& to, std::vector<LogprobEntry>& from) {
  for (LogprobEntry& e : from) to.push_back(std::move(e));
  from.clear();
}

void respond_whole(Run& run, httplib::Response& res) {
  std::string text;
  std::vector<LogprobEntry> logprobs;
  ChatAnswer answer;
  while (run.running()) {
    CompletionText::Delta d = run.step(kPollInterval);
    text += d.text;
    answer.add(d.events);
    append(logprobs, d.logprobs);
  }
  const Outcome& o = run.outcome();
  if (o.kind == Outcome::kFailed) {
    if (o.status == kClientClosed)
      res.status = kClientClosed;
    else
      set_error(res, o.status, o.type, "", o.message);
    return;
  }
  const bool lp = run.request().generation.logprobs;
  const bool chat = run.request().api == Api::kChat;
  const ojson message = answer.message();
  const std::string reason = chat ? chat_finish_reason(answer, o.finish_reason) : o.finish_reason;
  run.set_finish_reason(reason);
  res.status = 200;
  res.set_content(json_text(completion_response(run.meta(), text, reason, lp ? &logprobs : nullptr,
                                                run.usage(), chat ? &message : nullptr)),
                  "application/json");
}

// The streaming side: httplib calls pump() until it returns false (abort) or sink.done().
struct EventStream {
  std::unique_ptr<Run> run;
  bool started = false;
  std::vector<LogprobEntry> pending;  // logprobs of tokens whose text is still held back
  ChatAnswer answer;                  // chat: what was sent, for the finish reason

  bool pump(httplib::DataSink& sink) {
    const ApiRequest& r = run->request();
    const ResponseMeta& m = run->meta();
    const bool chat = r.api == Api::kChat, lp = r.generation.logprobs;
    auto write = [&](const std::string& s) {
      if (sink.write(s.data(), s.size())) return true;
      run->client_gone();
      return false;
    };
    if (!started) {  // the role first, at once: the client sees the stream has begun
      started = true;
      if (chat)
        return write(sse_event(
            chat_chunk(m, {{"role", "assistant"}, {"content", ""}}, "", nullptr, r.include_usage)));
    }
    CompletionText::Delta d = run->step(kPollInterval);
    append(pending, d.logprobs);
    if (chat) {
      std::vector<ojson> deltas = answer.add(d.events);
      if (deltas.empty() && !run->running() && !pending.empty())
        deltas.push_back({{"content", ""}});  // the held-back tokens' logprobs
      for (const ojson& delta : deltas) {  // logprobs go with the first chunk of the step
        const std::vector<LogprobEntry>* l = lp ? &pending : nullptr;
        const ojson chunk = chat_chunk(m, delta, "", l, r.include_usage);
        pending.clear();
        if (!write(sse_event(chunk))) return false;
      }
    } else if (!d.text.empty() || (!run->running() && !pending.empty())) {
      const std::vector<LogprobEntry>* l = lp ? &pending : nullptr;
      const ojson chunk = completion_chunk(m, d.text, "", l, r.include_usage);
      pending.clear();
      if (!write(sse_event(chunk))) return false;
    }
    if (run->running()) {
      if (sink.is_writable && !sink.is_writable()) {
        run->client_gone();
        return false;
      }
      return true;
    }
    const Outcome& o = run->outcome();
    if (o.kind == Outcome::kFailed) {
      if (o.status == kClientClosed) return false;
      if (!write(sse_event(error_json(o.message, o.type, "")))) return false;
      sink.done();
      return true;
    }
    const std::string reason = chat ? chat_finish_reason(answer, o.finish_reason) : o.finish_reason;
    run->set_finish_reason(reason);
    const ojson last = chat ? chat_chunk(m, ojson::object(), reason, nullptr, r.include_usage)
                            : completion_chunk(m, "", reason, nullptr, r.include_usage);
    if (!write(sse_event(last))) return false;
    if (r.include_usage && !write(sse_event(usage_chunk(m, run->usage())))) return false;
    if (!write(std::string(kSseDone))) return false;
    sink.done();
    return true;
  }
};

}  // namespace

void set_error(httplib::Response& res, int status, const std::string& type,
               const std::string& param, const std::string& message, const std::string& code) {
  res.status = status;
  res.set_content(json_text(error_json(message, type, param, code)), "application/json");
}

void handle_completion(const CompletionContext& ctx, Api api, const httplib::Request& req,
                       httplib::Response& res) {
  const Clock::time_point arrived = Clock::now();
  // Found before the chat template renders, so that a client gone away stops the render.
  const ConnectionWatch watch(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
  ApiRequest request;
  try {
    request = parse_request(api, req.body, ctx.model, [&watch] { return watch.closed(); });
  } catch (const ApiError& e) {
    set_error(res, e.status(), e.type(), e.param(), e.what(), e.code());
    return;
  }
  if (ctx.model.test_replies) request.generation.params.ignore_eos = true;  // the reply decides
  Scheduler::Submitted s;
  try {
    s = ctx.scheduler.submit(request.generation);
  } catch (const Error& e) {  // what the parser let through and the scheduler refuses
    set_error(res, 400, "invalid_request_error", "", e.what());
    return;
  }
  if (!s.stream) {
    if (s.queue_full) res.set_header("Retry-After", "1");
    set_error(res, 503, "server_error", "",
              s.refusal.empty() ? std::string("the server cannot take the request") : s.refusal);
    return;
  }
  auto run = std::make_unique<Run>(ctx, std::move(request), std::move(s.stream), watch, arrived);
  if (!run->request().stream) {
    respond_whole(*run, res);
    return;
  }
  auto events = std::make_shared<EventStream>();
  events->run = std::move(run);
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");  // proxies: do not buffer the events
  res.set_chunked_content_provider(
      "text/event-stream", [events](size_t, httplib::DataSink& sink) { return events->pump(sink); },
      [events](bool) { events->run.reset(); });  // cancels a request still running
}

}  // namespace moex::serve
