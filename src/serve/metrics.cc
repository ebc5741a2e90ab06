// Metrics (see metrics.h). Names follow Prometheus' conventions: a moex_ prefix, base units
// (seconds), counters ending in _total.
#include "serve/metrics.h"

#include <algorithm>
#include <charconv>

#include "core/error.h"

namespace moex::serve {
namespace {

// Bucket bounds in seconds. Measured on the 2-core host (serve-2026-12-01): inter-token
// 18 ms at 1 stream to 135 ms (p50) and 1.7 s (p99) at 8; time to first token 0.2 to 11.5 s.
const std::vector<double> kTtftBounds = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                         2.5,  5,     10,   20,  40,   80};
const std::vector<double> kItlBounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                        0.1,   0.25,   0.5,   1,    2.5};
const std::vector<double> kDurationBounds = {0.05, 0.1, 0.25, 0.5, 1,   2.5, 5,
                                             10,   30,  60,   120, 300, 600};
// Reasons listed even before one occurs (a series that appears late reads as missing data).
const char* const kReasons[] = {"stop", "length", "tool_calls", "cancelled", "error"};

std::string number(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

void head(std::string& out, const std::string& name, const char* type, const char* help) {
  out += str_cat("# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

void sample(std::string& out, const std::string& name, const char* type, const char* help,
            int64_t v) {
  head(out, name, type, help);
  out += str_cat(name, " ", v, "\n");
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
  const size_t i = size_t(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  ++counts_[i];
  sum_ += v;
  ++count_;
}

std::string Histogram::lines(const std::string& name) const {
  std::string out;
  int64_t below = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    below += counts_[i];
    out += str_cat(name, "_bucket{le=\"", number(bounds_[i]), "\"} ", below, "\n");
  }
  out += str_cat(name, "_bucket{le=\"+Inf\"} ", count_, "\n");
  out += str_cat(name, "_sum ", number(sum_), "\n", name, "_count ", count_, "\n");
  return out;
}

Metrics::Metrics() : ttft_(kTtftBounds), itl_(kItlBounds), duration_(kDurationBounds) {
  for (const char* r : kReasons) finished_[r] = 0;
}

void Metrics::first_token(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  ttft_.observe(seconds);
}

void Metrics::inter_token(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  itl_.observe(seconds);
}

void Metrics::request_done(const RequestRecord& r) {
  std::lock_guard<std::mutex> lock(mu_);
  ++finished_[r.finish_reason];
  prompt_tokens_ += r.prompt_tokens;
  completion_tokens_ += r.completion_tokens;
  duration_.observe(r.seconds);
}

std::string Metrics::exposition(const SchedulerGauges& g) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  head(out, "moex_requests_total", "counter",
       "Requests that ran, by finish reason (cancelled: the client went away or the server "
       "stopped).");
  for (const auto& [reason, n] : finished_)
    out += str_cat("moex_requests_total{finish_reason=\"", reason, "\"} ", n, "\n");
  sample(out, "moex_requests_rejected_total", "counter",
         "Requests refused with 503 because the queue was full.", g.rejected);
  sample(out, "moex_prompt_tokens_total", "counter", "Prompt tokens of the requests that ran.",
         prompt_tokens_);
  sample(out, "moex_prompt_tokens_cached_total", "counter",
         "Prompt tokens not run: reused from the slot's previous request or loaded from the "
         "prompt cache.",
         g.cached_tokens);
  sample(out, "moex_prompt_cache_hits_total", "counter",
         "Requests that loaded a prefix of their prompt from the prompt cache (--cache-ram).",
         g.cache_hits);
  sample(out, "moex_prompt_cache_misses_total", "counter",
         "Requests for which the prompt cache held no prefix longer than their slot's own.",
         g.cache_misses);
  sample(out, "moex_prompt_cache_hit_tokens_total", "counter",
         "Prompt tokens loaded from the prompt cache instead of being run.", g.cache_hit_tokens);
  sample(out, "moex_prompt_cache_evictions_total", "counter",
         "Prompt cache entries dropped, least recently used first, to stay within the budget.",
         g.cache_evictions);
  sample(out, "moex_prompt_cache_bytes", "gauge",
         "Bytes the prompt cache holds (KV rows, recurrent states, tokens, index).", g.cache_bytes);
  sample(out, "moex_prompt_cache_entries", "gauge", "Sequences the prompt cache holds.",
         g.cache_entries);
  sample(out, "moex_prompt_cache_budget_bytes", "gauge",
         "The prompt cache's budget (--cache-ram; 0: off).", g.cache_budget_bytes);
  sample(out, "moex_spec_decode_draft_tokens_total", "counter",
         "Draft tokens run by speculative decoding (--spec).", g.spec_drafted);
  sample(out, "moex_spec_decode_accepted_tokens_total", "counter",
         "Draft tokens output as drafted (accepted) by speculative decoding.", g.spec_accepted);
  sample(out, "moex_spec_decode_reruns_total", "counter",
         "Speculative passes whose kept tokens ran again to rewind recurrent states.",
         g.spec_reruns);
  sample(out, "moex_generation_tokens_total", "counter",
         "Tokens generated for the requests that ran.", completion_tokens_);
  head(out, "moex_time_to_first_token_seconds", "histogram",
       "From the handler taking a request to its first token's sampling.");
  out += ttft_.lines("moex_time_to_first_token_seconds");
  head(out, "moex_inter_token_latency_seconds", "histogram",
       "Between the samplings of consecutive tokens of a request.");
  out += itl_.lines("moex_inter_token_latency_seconds");
  head(out, "moex_request_duration_seconds", "histogram",
       "From the handler taking a request to its end.");
  out += duration_.lines("moex_request_duration_seconds");
  sample(out, "moex_requests_queued", "gauge", "Requests waiting for a slot.", g.queued);
  sample(out, "moex_slots_busy", "gauge", "Slots decoding a request.", g.slots_busy);
  sample(out, "moex_slots_total", "gauge", "Slots (--parallel).", g.slots_total);
  return out;
}

}  // namespace moex::serve
