// read_bandwidth: the probe returns finite positive figures for a small buffer, and the
// last-level cache size is read from sysfs when the machine exposes it.
#include "core/read_bandwidth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <vector>

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

// stream_read's checksum is the documented word-then-byte sum, at every offset and length
// (the vector loop, the word tail and the byte tail), so no byte is skipped or read twice.
TEST(ReadBandwidth, StreamReadSumsEveryByteOnce) {
  std::vector<unsigned char> buf(4096 + 64);
  uint64_t st = 12345;
  for (auto& b : buf) b = static_cast<unsigned char>((st = st * 6364136223846793005ull + 1) >> 56);
  auto reference = [&](size_t off, size_t n) {
    uint64_t s = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w = 0;
      for (int j = 7; j >= 0; --j) w = (w << 8) | buf[off + i + size_t(j)];
      s += w;
    }
    for (; i < n; ++i) s += buf[off + i];
    return s;
  };
  for (size_t off : {size_t{0}, size_t{1}, size_t{7}, size_t{33}})
    for (size_t n : {size_t{0}, size_t{5}, size_t{8}, size_t{127}, size_t{128}, size_t{129},
                     size_t{1000}, size_t{4096}}) {
      ASSERT_EQ(stream_read(buf.data() + off, n), reference(off, n)) << off << " " << n;
      if (n > 0) {  // a changed last byte changes the sum: it was read
        const uint64_t before = reference(off, n);
        buf[off + n - 1] ^= 1;
        EXPECT_NE(stream_read(buf.data() + off, n), before) << off << " " << n;
        EXPECT_EQ(stream_read(buf.data() + off, n), reference(off, n));
        buf[off + n - 1] ^= 1;
      }
    }
}

TEST(ReadBandwidth, LastLevelCacheFromSysfs) {
  if (!std::filesystem::exists("/sys/devices/system/cpu/cpu0/cache/index0/size"))
    GTEST_SKIP() << "no cache information in sysfs on this machine";
  EXPECT_GT(last_level_cache_bytes(), 0);
}

}  // namespace
}  // namespace moex
