// Metrics: histogram buckets cumulative with their sum and count, counters by finish reason
// (every reason listed from the start), gauges as given; the text in Prometheus' format.
#include "serve/metrics.h"

#include <gtest/gtest.h>

#include <string>

namespace moex::serve {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

TEST(Histogram, BucketsAreCumulativeAndAtOrBelowTheirBound) {
  Histogram h({0.125, 0.5, 1});
  for (double v : {0.0625, 0.125, 0.25, 2.0}) h.observe(v);  // sums exact in binary
  EXPECT_EQ(h.lines("x"),
            "x_bucket{le=\"0.125\"} 2\n"
            "x_bucket{le=\"0.5\"} 3\n"
            "x_bucket{le=\"1\"} 3\n"
            "x_bucket{le=\"+Inf\"} 4\n"
            "x_sum 2.4375\n"
            "x_count 4\n");
  EXPECT_EQ(Histogram({1}).lines("y"),
            "y_bucket{le=\"1\"} 0\ny_bucket{le=\"+Inf\"} 0\ny_sum 0\n"
            "y_count 0\n");
}

TEST(Metrics, AStartedServerListsEverySeriesAtZero) {
  const std::string t = Metrics().exposition({4, 0, 0, 0, 0});  // 4 slots
  for (const char* r : {"stop", "length", "tool_calls", "cancelled", "error"})
    EXPECT_TRUE(has_line(t, std::string("moex_requests_total{finish_reason=\"") + r + "\"} 0"))
        << r << "\n"
        << t;
  EXPECT_TRUE(has_line(t, "# TYPE moex_requests_total counter")) << t;
  EXPECT_TRUE(has_line(t, "# TYPE moex_time_to_first_token_seconds histogram")) << t;
  EXPECT_TRUE(has_line(t, "moex_time_to_first_token_seconds_count 0")) << t;
  EXPECT_TRUE(has_line(t, "moex_inter_token_latency_seconds_bucket{le=\"+Inf\"} 0")) << t;
  EXPECT_TRUE(has_line(t, "# TYPE moex_slots_total gauge")) << t;
  EXPECT_TRUE(has_line(t, "moex_slots_total 4")) << t;
  EXPECT_TRUE(has_line(t, "moex_slots_busy 0")) << t;
  EXPECT_EQ(t.back(), '\n');
  // Every sample line's family was introduced by HELP and TYPE before it.
  size_t pos = 0;
  std::string family;
  while (pos < t.size()) {
    const std::string line = t.substr(pos, t.find('\n', pos) - pos);
    pos += line.size() + 1;
    if (line.rfind("# TYPE ", 0) == 0) family = line.substr(7, line.find(' ', 7) - 7);
    if (line[0] != '#') {
      EXPECT_EQ(line.rfind(family, 0), 0u) << line;
    }
  }
}

TEST(Metrics, RequestsTokensAndTimesAreCounted) {
  Metrics m;
  m.first_token(0.2);
  m.inter_token(0.02);
  m.inter_token(0.03);
  m.request_done(
      {.finish_reason = "length", .prompt_tokens = 7, .completion_tokens = 3, .seconds = 0.3});
  m.first_token(0.4);
  m.request_done(
      {.finish_reason = "tool_calls", .prompt_tokens = 5, .completion_tokens = 1, .seconds = 0.45});
  m.request_done(
      {.finish_reason = "cancelled", .prompt_tokens = 2, .completion_tokens = 0, .seconds = 3});
  const std::string t = m.exposition(
      {.slots_total = 2,
       .slots_busy = 1,
       .queued = 3,
       .rejected = 4,
       .cached_tokens = 6,
       .cache_hits = 7,
       .cache_misses = 8,
       .cache_hit_tokens = 9,
       .cache_evictions = 10,
       .cache_bytes = 11,
       .cache_entries = 12,
       .cache_budget_bytes = 13,
       .spec_drafted = 15,
       .spec_accepted = 16,
       .spec_reruns = 17});
  for (const std::string line : {
           "moex_requests_total{finish_reason=\"length\"} 1",
           "moex_requests_total{finish_reason=\"tool_calls\"} 1",
           "moex_requests_total{finish_reason=\"cancelled\"} 1",
           "moex_requests_total{finish_reason=\"stop\"} 0",
           "moex_requests_rejected_total 4",
           "moex_prompt_tokens_total 14",
           "moex_prompt_tokens_cached_total 6",
           "moex_prompt_cache_hits_total 7",
           "moex_prompt_cache_misses_total 8",
           "moex_prompt_cache_hit_tokens_total 9",
           "moex_prompt_cache_evictions_total 10",
           "moex_prompt_cache_bytes 11",
           "moex_prompt_cache_entries 12",
           "moex_prompt_cache_budget_bytes 13",
           "moex_spec_decode_draft_tokens_total 15",
           "moex_spec_decode_accepted_tokens_total 16",
           "moex_spec_decode_reruns_total 17",
           "moex_generation_tokens_total 4",
           "moex_time_to_first_token_seconds_bucket{le=\"0.1\"} 0",
           "moex_time_to_first_token_seconds_bucket{le=\"0.25\"} 1",
           "moex_time_to_first_token_seconds_bucket{le=\"0.5\"} 2",
           "moex_time_to_first_token_seconds_count 2",
           "moex_inter_token_latency_seconds_bucket{le=\"0.025\"} 1",
           "moex_inter_token_latency_seconds_bucket{le=\"0.05\"} 2",
           "moex_inter_token_latency_seconds_sum 0.05",
           "moex_inter_token_latency_seconds_count 2",
           "moex_request_duration_seconds_bucket{le=\"0.5\"} 2",
           "moex_request_duration_seconds_bucket{le=\"5\"} 3",
           "moex_request_duration_seconds_count 3",
           "moex_requests_queued 3",
           "moex_slots_busy 1",
           "moex_slots_total 2",
       })
    EXPECT_TRUE(has_line(t, line)) << line << "\n" << t;
}

}  // namespace
}  // namespace moex::serve
