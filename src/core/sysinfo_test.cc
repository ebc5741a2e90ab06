// parse_vm_hwm_bytes over a table of /proc/self/status texts, parse_mem_available_bytes over
// /proc/meminfo ones; peak_rss_bytes at least the resident memory of the moment.
#include "core/sysinfo.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>

namespace moex {
namespace {

TEST(SysInfo, ParseVmHwmTable) {
  const std::string real =
      "Name:\tmoex\nUmask:\t0022\nState:\tR (running)\nVmPeak:\t  123456 kB\n"
      "VmSize:\t  120000 kB\nVmHWM:\t   18624 kB\nVmRSS:\t   18000 kB\n";
  struct Case {
    std::string text;
    std::optional<int64_t> want;
  };
  const Case cases[] = {
      {real, int64_t{18624} * 1024},
      {"VmHWM:\t1 kB\n", int64_t{1024}},
      {"VmHWM:\t0 kB", int64_t{0}},                      // last line, no newline
      {"VmHWM:   42 kB  \n", std::nullopt},              // trailing blanks after the unit
      {"VmPeak:\t99 kB\nVmRSS:\t5 kB\n", std::nullopt},  // no VmHWM line
      {"", std::nullopt},
      {"XVmHWM:\t5 kB\n", std::nullopt},  // the key must start a line
      {"Name:\tVmHWM:\t5 kB\n", std::nullopt},
      {"VmHWM:\t\n", std::nullopt},       // no figure
      {"VmHWM:\t12\n", std::nullopt},     // no unit
      {"VmHWM:\t12 MB\n", std::nullopt},  // another unit
      {"VmHWM:\t-3 kB\n", std::nullopt},
      {"VmHWM:\t99999999999999999999999 kB\n", std::nullopt},  // overflow
  };
  for (const Case& c : cases) EXPECT_EQ(parse_vm_hwm_bytes(c.text), c.want) << c.text;
}

TEST(SysInfo, ParseMemAvailableTable) {
  const std::string real =
      "MemTotal:       24592472 kB\nMemFree:         1201564 kB\n"
      "MemAvailable:   17023896 kB\nBuffers:          310124 kB\n";
  EXPECT_EQ(parse_mem_available_bytes(real), int64_t{17023896} * 1024);
  EXPECT_EQ(parse_mem_available_bytes("MemTotal:  5 kB\nMemFree:  1 kB\n"), std::nullopt);
  EXPECT_EQ(parse_mem_available_bytes("MemAvailable:  5 MB\n"), std::nullopt);
  EXPECT_EQ(parse_mem_available_bytes(""), std::nullopt);
  EXPECT_GT(mem_available_bytes(), 0);  // this host has a /proc/meminfo
}

// (That it starts afresh at exec is checked by tools/hostile_input_test.sh, which runs
// `moex generate` exec'd from a process with 512 MiB resident.)
TEST(SysInfo, PeakRssCoversWhatIsResidentNow) {
  constexpr size_t kBytes = size_t{64} << 20;
  std::unique_ptr<char[]> big(new char[kBytes]);
  std::memset(big.get(), 1, kBytes);  // touched: resident
  const int64_t now = current_rss_bytes();
  const int64_t peak = peak_rss_bytes();
  EXPECT_GE(now, int64_t(kBytes));
  EXPECT_GE(peak, now);
  EXPECT_EQ(big[kBytes - 1], 1);
}

}  // namespace
}  // namespace moex
