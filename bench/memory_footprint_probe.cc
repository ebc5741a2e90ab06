// memory_footprint_probe: how this machine serves reads that jump between regions of a large
// footprint (what MoE decode does: a few MB of routed experts out of many GB), next to the
// sequential read the bench-moe probe measures. Diagnostic, not a test; figures in
// docs/benchmark_results/cpu-moe-2026-11-29-s3.md.
//
//   memory_footprint_probe [SMALL_GB [LARGE_GB]]   (defaults 2 and 12)
//
// Part 1, per pool size: GB/s of reading the whole pool as regions of 512 KB / 2 MB / 8 MB, in
// address order and in a shuffled order (each region once per sweep, so no cache reuse), each
// region split evenly over the threads (each thread walks the regions on its own). Part 2,
// large pool: latency of the first load to a random 2 MB page right after every page was
// touched, after 1 s and 3 s idle, and the same with a background thread touching every 2 MB
// page each 0.25 s.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/huge_pages.h"
#include "core/parallel.h"
#include "core/read_bandwidth.h"
#include "core/strict_parse.h"

namespace {

using moex::parallel_for;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Pool {
  moex::HugeArray<char> mem;
  size_t bytes = 0;
  explicit Pool(size_t gb) : mem(moex::make_huge_array<char>(gb << 30, "probe pool")), bytes(gb << 30) {
    char* p = mem.get();
    parallel_for(int64_t(bytes >> 21), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) std::memset(p + (i << 21), int(i), size_t(1) << 21);
    });
  }
};

// GB/s of reading every region once in `order`, each region split over the threads.
double read_regions(const Pool& pool, size_t region, const std::vector<size_t>& order) {
  const int nt = moex::num_threads();
  std::vector<uint64_t> sums(size_t(nt), 0);
  const double t0 = now();
  parallel_for(nt, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t)
      for (size_t r : order) {
        const size_t part = region / size_t(nt);
        sums[size_t(t)] += moex::stream_read(pool.mem.get() + r * region + size_t(t) * part, part);
      }
  });
  const double dt = now() - t0;
  volatile uint64_t sink = 0;
  for (uint64_t s : sums) sink = sink + s;
  return double(order.size() * region) / dt / 1e9;
}

void part1(size_t gb) {
  Pool pool(gb);
  std::printf("\n| pool | region | address order GB/s | shuffled order GB/s |\n|--:|--:|--:|--:|\n");
  std::mt19937_64 rng(7);
  for (size_t region : {size_t(512) << 10, size_t(2) << 20, size_t(8) << 20}) {
    std::vector<size_t> order(pool.bytes / region);
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::vector<double> seq, shuf;
    for (int rep = 0; rep < 3; ++rep) {
      std::sort(order.begin(), order.end());
      seq.push_back(read_regions(pool, region, order));
      std::shuffle(order.begin(), order.end(), rng);
      shuf.push_back(read_regions(pool, region, order));
    }
    std::sort(seq.begin(), seq.end());
    std::sort(shuf.begin(), shuf.end());
    std::printf("| %zu GB | %zu KB | %.1f | %.1f |\n", gb, region >> 10, seq[1], shuf[1]);
  }
}

void part2(size_t gb) {
  Pool pool(gb);
  const int64_t pages = int64_t(pool.bytes >> 21);
  volatile char sink = 0;  // the sampling thread's; the keeper has its own
  auto touch_all = [&](volatile char& into) {
    for (int64_t p = 0; p < pages; ++p) into = char(into + pool.mem[size_t(p) << 21]);
  };
  auto sample = [&](const char* label) {
    std::mt19937_64 rng(9);
    std::vector<double> ns;
    for (int i = 0; i < 400; ++i) {
      const size_t at = ((rng() % size_t(pages)) << 21) + 5 * 4096 + 128;
      const double t0 = now();
      sink = char(sink + *static_cast<volatile char*>(pool.mem.get() + at));
      ns.push_back((now() - t0) * 1e9);
    }
    std::sort(ns.begin(), ns.end());
    std::printf("| %s | %.0f | %.0f | %.0f |\n", label, ns[200], ns[300], ns[360]);
  };
  std::printf("\nFirst load to a random 2 MB page of a %zu GB pool (ns):\n\n"
              "| state | median | p75 | p90 |\n|---|--:|--:|--:|\n", gb);
  for (bool keeper_on : {false, true}) {
    std::atomic<bool> stop{false};
    std::thread keeper;
    if (keeper_on)
      keeper = std::thread([&] {
        volatile char own = 0;
        while (!stop) {
          touch_all(own);
          std::this_thread::sleep_for(std::chrono::milliseconds(250));
        }
      });
    const char* tag = keeper_on ? ", keeper thread" : "";
    for (double idle : {0.0, 1.0, 3.0}) {
      touch_all(sink);
      std::this_thread::sleep_for(std::chrono::duration<double>(idle));
      char label[96];
      std::snprintf(label, sizeof(label), "all touched, then %.0f s idle%s", idle, tag);
      sample(label);
    }
    stop = true;
    if (keeper.joinable()) keeper.join();
  }
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc > 3) throw moex::Error("usage: memory_footprint_probe [SMALL_GB [LARGE_GB]]");
  const size_t small_gb = argc > 1 ? size_t(moex::parse_int_strict(argv[1], "SMALL_GB", 1, 1024)) : 2;
  const size_t large_gb = argc > 2 ? size_t(moex::parse_int_strict(argv[2], "LARGE_GB", 1, 1024)) : 12;
  std::printf("# memory_footprint_probe (%d threads)\n", moex::num_threads());
  const moex::ReadBandwidthResult bw = moex::measure_read_bandwidth({0, 0, 5});
  std::printf("\nstreaming probe (bench-moe's): best %.1f GB/s, median %.1f\n", bw.best_gbps,
              bw.median_gbps);
  part1(small_gb);
  part1(large_gb);
  part2(large_gb);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "memory_footprint_probe: %s\n", e.what());
  return 2;
}
