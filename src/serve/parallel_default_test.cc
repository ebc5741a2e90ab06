// default_parallel as a table: the cap, the threads and the memory each decide in turn.
#include "serve/parallel_default.h"

#include <gtest/gtest.h>

namespace moex::serve {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20, kGiB = int64_t{1} << 30;

TEST(DefaultParallel, TheSmallestTermWins) {
  struct Case {
    int threads;
    int64_t available, kv;
    int want;
  };
  const Case cases[] = {
      {2, 16 * kGiB, 64 * kMiB, 4},   // the cap (2 x 2 threads = 4, memory for 128)
      {16, 16 * kGiB, 64 * kMiB, 4},  // the cap
      {1, 16 * kGiB, 64 * kMiB, 2},   // 2 x 1 thread
      {0, 16 * kGiB, 64 * kMiB, 2},   // a thread count below 1 taken as 1
      {8, 1 * kGiB, 256 * kMiB, 2},   // memory: 512 MiB / 256 MiB
      {8, 1 * kGiB, 300 * kMiB, 1},   // memory: 512 / 300
      {8, 1 * kGiB, 2 * kGiB, 1},     // no room for one: still 1 (the model needs it)
      {8, 0, 64 * kMiB, 4},           // memory unknown: no bound
      {8, 16 * kGiB, 0, 4},           // no KV cache size: no bound
  };
  for (const Case& c : cases) {
    const ParallelChoice p = default_parallel(c.threads, c.available, c.kv);
    EXPECT_EQ(p.slots, c.want) << c.threads << " threads, " << c.available << " available, " << c.kv
                               << " KV: " << p.reason;
  }
}

TEST(DefaultParallel, TheReasonGivesEachTerm) {
  EXPECT_EQ(default_parallel(2, 16 * kGiB, 64 * kMiB).reason,
            "min(4, 2 x 2 threads, 16.0 GiB available / 2 / 64.0 MiB of KV cache per slot = 128)");
  EXPECT_EQ(default_parallel(1, 0, 64 * kMiB).reason,
            "min(4, 2 x 1 threads (available memory unknown))");
  EXPECT_EQ(default_parallel(8, 1 * kGiB, 2 * kGiB).reason,
            "min(4, 2 x 8 threads, 1.0 GiB available / 2 / 2.0 GiB of KV cache per slot = 0), "
            "at least 1");
}

// --cache-ram's default: a quarter of what the slots' KV caches leave, at most 8 GiB.
TEST(DefaultCacheRam, AQuarterOfWhatTheSlotsLeaveAtMost8GiB) {
  EXPECT_EQ(default_cache_ram(64 * kGiB, 1 * kGiB).mib, 8192);
  EXPECT_EQ(default_cache_ram(17 * kGiB, 1 * kGiB).mib, 4096);
  EXPECT_EQ(default_cache_ram(1 * kGiB, 2 * kGiB).mib, 0);  // nothing left: off
  EXPECT_EQ(default_cache_ram(0, 1 * kGiB).mib, 8192);      // unknown
  EXPECT_EQ(default_cache_ram(17 * kGiB, 1 * kGiB).reason,
            "min(8192 MiB, (17.0 GiB available - 1.0 GiB of the slots' KV caches) / 4)");
}

}  // namespace
}  // namespace moex::serve
