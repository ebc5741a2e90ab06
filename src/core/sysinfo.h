// Facts about the running host and build, printed with every benchmark: CPU model, peak
// resident memory, moex commit, date; plus a monotonic timer.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace moex {

std::string cpu_model_name();   // from /proc/cpuinfo, "unknown" if absent
int64_t peak_rss_bytes();       // getrusage ru_maxrss
int64_t current_rss_bytes();    // /proc/self/statm
std::string moex_commit();      // git commit the binary was built from
std::string utc_date_time();    // "2026-11-29T18:20:58Z"

inline double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

}  // namespace moex
