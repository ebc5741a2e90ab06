// parallel_for on the persistent pool: every index exactly once in the documented static
// chunks, nested calls run inline, exceptions reach the caller, thread counts may shrink and
// grow between jobs, many short jobs in a row (the decode pattern) lose no work, and a chunk
// whose worker is late is run by a thread that is free.
#include "core/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace moex {
namespace {

class ParallelFor : public ::testing::Test {
 protected:
  void TearDown() override { set_num_threads(saved_); }
  int saved_ = num_threads();
};

TEST_F(ParallelFor, EveryIndexOnceInStaticChunks) {
  for (int threads : {1, 2, 3, 5, 2, 1, 4}) {  // shrink and grow between jobs
    set_num_threads(threads);
    for (int64_t n : {0, 1, 2, 3, 7, 64, 1001}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::vector<std::pair<int64_t, int64_t>> chunks(size_t(threads), {-1, -1});
      std::atomic<int> calls{0};
      parallel_for(n, [&](int64_t lo, int64_t hi) {
        ++calls;
        for (int64_t i = lo; i < hi; ++i) ++hits[size_t(i)];
        if (threads > 1 && n > 1)
          for (int t = 0; t < threads; ++t)
            if (lo == n * t / threads) chunks[size_t(t)] = {lo, hi};
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << "n " << n << " i " << i;
      if (threads > 1 && n > 1) {
        int nonempty = 0;
        for (int t = 0; t < threads; ++t) {
          const int64_t lo = n * t / threads, hi = n * (t + 1) / threads;
          if (hi > lo) {
            ++nonempty;
            EXPECT_EQ(chunks[size_t(t)], std::make_pair(lo, hi)) << "threads " << threads << " n " << n;
          }
        }
        EXPECT_EQ(calls.load(), nonempty);
      } else {
        EXPECT_EQ(calls.load(), n > 0 ? 1 : 0);
      }
    }
  }
}

TEST_F(ParallelFor, NestedCallsRunInline) {
  set_num_threads(2);
  std::atomic<int> inner_calls{0};
  parallel_for(2, [&](int64_t, int64_t) {
    parallel_for(10, [&](int64_t lo, int64_t hi) {
      EXPECT_EQ(lo, 0);
      EXPECT_EQ(hi, 10);
      ++inner_calls;
    });
  });
  EXPECT_EQ(inner_calls.load(), 2);
}

TEST_F(ParallelFor, ExceptionReachesTheCallerAfterAllChunks) {
  set_num_threads(3);
  std::atomic<int> finished{0};
  EXPECT_THROW(parallel_for(3,
                            [&](int64_t lo, int64_t) {
                              if (lo == 2) throw std::runtime_error("chunk 2");
                              ++finished;
                            }),
               std::runtime_error);
  EXPECT_EQ(finished.load(), 2);
  // The pool still works afterwards.
  std::atomic<int64_t> sum{0};
  parallel_for(100, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) sum += i;
  });
  EXPECT_EQ(sum.load(), 4950);
}

TEST_F(ParallelFor, ManyShortJobsLoseNoWork) {
  set_num_threads(2);
  int64_t total = 0;
  for (int job = 0; job < 20000; ++job) {
    std::atomic<int64_t> sum{0};
    parallel_for(4, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) sum += i + job;
    });
    total += sum.load();
  }
  int64_t want = 0;
  for (int job = 0; job < 20000; ++job) want += 6 + 4 * job;
  EXPECT_EQ(total, want);
}

// Workers sleep after a millisecond without work; a job published after a longer pause finds
// them asleep. The first threads to run (the caller, done with chunk 0 long before a sleeping
// worker wakes, or the first worker to wake) must take the chunks of the workers still waking
// (with fixed owners every thread ran exactly its own chunk): this is what keeps a process fast
// when other processes hold the cores its workers wait for. Each chunk still runs exactly
// once, with its static bounds.
TEST_F(ParallelFor, FreeThreadsRunTheChunksOfLateWorkers) {
  constexpr int kThreads = 4;
  set_num_threads(kThreads);
  const std::thread::id caller = std::this_thread::get_id();
  int jobs_with_a_thread_running_two = 0;
  for (int job = 0; job < 10; ++job) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::vector<int> runs(kThreads, 0);
    std::vector<std::thread::id> runner(kThreads);
    parallel_for(kThreads * 10, [&](int64_t lo, int64_t hi) {
      ASSERT_EQ(hi - lo, 10);
      runs[size_t(lo / 10)] += 1;
      runner[size_t(lo / 10)] = std::this_thread::get_id();
    });
    for (int t = 0; t < kThreads; ++t) ASSERT_EQ(runs[size_t(t)], 1) << "job " << job;
    EXPECT_EQ(runner[0], caller);
    bool two = false;
    for (int a = 0; a < kThreads; ++a)
      for (int b = a + 1; b < kThreads; ++b) two = two || runner[size_t(a)] == runner[size_t(b)];
    jobs_with_a_thread_running_two += two;
  }
  EXPECT_GT(jobs_with_a_thread_running_two, 0);
}

}  // namespace
}  // namespace moex
