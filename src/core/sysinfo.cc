// Host and build facts.
#include "core/sysinfo.h"

#include <sys/resource.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <sstream>

#include "moex_git_commit.h"  // generated at build time by cmake/git_commit.cmake

namespace moex {

std::string cpu_model_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) return line.substr(line.find_first_not_of(' ', p + 1));
    }
  }
  return "unknown";
}

namespace {

// The line "KEY   1234 kB" of a /proc text (status, meminfo) in bytes.
std::optional<int64_t> parse_kib_line(std::string_view status, std::string_view kKey) {
  size_t at = 0;
  while (at < status.size() && status.compare(at, kKey.size(), kKey) != 0) {
    at = status.find('\n', at);
    if (at == std::string_view::npos) return std::nullopt;
    ++at;
  }
  if (at >= status.size()) return std::nullopt;
  std::string_view line = status.substr(at + kKey.size());
  line = line.substr(0, line.find('\n'));
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string_view::npos || line[i] < '0' || line[i] > '9') return std::nullopt;
  int64_t kib = 0;
  for (; i < line.size() && line[i] >= '0' && line[i] <= '9'; ++i) {
    if (kib > (int64_t{1} << 50)) return std::nullopt;  // beyond any memory: not a figure
    kib = kib * 10 + (line[i] - '0');
  }
  // The kernel writes "VmHWM:\t   1234 kB", "MemAvailable:   1234 kB".
  const size_t unit = line.find_first_not_of(" \t", i);
  if (unit == std::string_view::npos || line.substr(unit) != "kB") return std::nullopt;
  return kib * 1024;
}

}  // namespace

std::optional<int64_t> parse_vm_hwm_bytes(std::string_view status) {
  return parse_kib_line(status, "VmHWM:");
}

std::optional<int64_t> parse_mem_available_bytes(std::string_view meminfo) {
  return parse_kib_line(meminfo, "MemAvailable:");
}

int64_t mem_available_bytes() {
  std::ifstream f("/proc/meminfo");
  std::ostringstream text;
  text << f.rdbuf();
  return parse_mem_available_bytes(text.str()).value_or(0);
}

int64_t peak_rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::ostringstream text;
  text << f.rdbuf();
  if (const std::optional<int64_t> hwm = parse_vm_hwm_bytes(text.str())) return *hwm;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return int64_t(ru.ru_maxrss) * 1024;
}

int64_t current_rss_bytes() {
  std::ifstream f("/proc/self/statm");
  int64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

std::string moex_commit() { return MOEX_GIT_COMMIT; }

std::string utc_date_time() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace moex
