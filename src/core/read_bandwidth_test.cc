// read_bandwidth: the probe returns finite positive figures for a small buffer, and the
// last-level cache size is read from sysfs when the machine exposes it.
#include "core/read_bandwidth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

namespace moex {
namespace {

TEST(ReadBandwidth, SmallProbeGivesFinitePositiveFigures) {
  const ReadBandwidthResult r = measure_read_bandwidth({64 << 20, 1, 2});
  EXPECT_EQ(r.bytes, 64 << 20);
  EXPECT_EQ(r.threads, 1);
  EXPECT_EQ(r.passes, 2);
  EXPECT_TRUE(std::isfinite(r.best_gbps) && r.best_gbps > 0);
  EXPECT_LE(r.median_gbps, r.best_gbps);
  // Sizes round up to whole pages.
  EXPECT_EQ(measure_read_bandwidth({4097, 1, 1}).bytes, 8192);
}

TEST(ReadBandwidth, LastLevelCacheFromSysfs) {
  if (!std::filesystem::exists("/sys/devices/system/cpu/cpu0/cache/index0/size"))
    GTEST_SKIP() << "no cache information in sysfs on this machine";
  EXPECT_GT(last_level_cache_bytes(), 0);
}

}  // namespace
}  // namespace moex
