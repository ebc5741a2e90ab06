// What `moex serve` counts about its requests (finish reasons, tokens, time to first token,
// inter-token latency, duration) and its Prometheus text exposition for GET /metrics, with the
// scheduler's gauges (queue depth, busy and total slots). Safe from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace moex::serve {

inline constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

// A Prometheus histogram: counts of observations at or below each bound, their sum and count.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);  // increasing upper bounds (+Inf implied)
  void observe(double v);
  // The exposition lines of `name` (_bucket{le=...} cumulative, _sum, _count).
  std::string lines(const std::string& name) const;

 private:
  std::vector<double> bounds_;
  std::vector<int64_t> counts_;  // per bound, then beyond the last
  double sum_ = 0;
  int64_t count_ = 0;
};

// One request that ran, as it ended.
struct RequestRecord {
  // stop, length, tool_calls (as the response said), cancelled (the client went away or the
  // server stopped), error
  std::string finish_reason;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  double seconds = 0;  // from the handler taking the request to its end
};

// The scheduler's side, read when /metrics is asked for.
struct SchedulerGauges {
  int slots_total = 0, slots_busy = 0, queued = 0;
  int64_t rejected = 0;       // refused with 503, the queue full
  int64_t cached_tokens = 0;  // prompt tokens not run: a slot's own or the prompt cache's
  // The prompt cache (--cache-ram, serve/prompt_cache.h): requests that loaded a prefix from it
  // and those that found none longer than their slot's own, the tokens loaded, entries dropped
  // for room; what it holds now and its budget.
  int64_t cache_hits = 0, cache_misses = 0, cache_hit_tokens = 0, cache_evictions = 0;
  int64_t cache_bytes = 0, cache_entries = 0, cache_budget_bytes = 0;
  // Speculative decoding (--spec): draft tokens run, those output as drafted, passes run again
  // to rewind recurrent states (all 0 without --spec).
  int64_t spec_drafted = 0, spec_accepted = 0, spec_reruns = 0;
};

class Metrics {
 public:
  Metrics();
  void first_token(double seconds);  // from the handler taking the request to its first token
  void inter_token(double seconds);  // between two consecutive tokens of a request
  void request_done(const RequestRecord& r);
  // The text exposition (format 0.0.4) of everything counted and `g`.
  std::string exposition(const SchedulerGauges& g) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, int64_t> finished_;  // by finish reason
  int64_t prompt_tokens_ = 0, completion_tokens_ = 0;
  Histogram ttft_, itl_, duration_;
};

}  // namespace moex::serve
