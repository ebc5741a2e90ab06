// Facts about the running host and build, printed with every benchmark: CPU model, peak
// resident memory, moex commit, date; plus a monotonic timer.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace moex {

std::string cpu_model_name();   // from /proc/cpuinfo, "unknown" if absent
// This process's peak resident memory: VmHWM of /proc/self/status, which belongs to the
// address space and starts afresh at exec. getrusage's ru_maxrss (the fallback where there is
// no /proc) keeps the high-water mark of the image before exec on Linux, so a run started from
// a large process would report that process's peak.
int64_t peak_rss_bytes();
// The VmHWM line of a /proc/PID/status text in bytes; nullopt when absent or malformed.
std::optional<int64_t> parse_vm_hwm_bytes(std::string_view proc_status);
int64_t current_rss_bytes();    // /proc/self/statm
// Memory the kernel estimates can be allocated without swapping (MemAvailable of
// /proc/meminfo, page cache it can drop included), in bytes; 0 when unknown.
int64_t mem_available_bytes();
// The MemAvailable line of a /proc/meminfo text in bytes; nullopt when absent or malformed.
std::optional<int64_t> parse_mem_available_bytes(std::string_view meminfo);
std::string moex_commit();      // git commit the binary was built from
std::string utc_date_time();    // "2026-11-29T18:20:58Z"

inline double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

}  // namespace moex
