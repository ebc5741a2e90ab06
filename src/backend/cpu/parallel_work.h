// parallel_for for ops whose size varies from tiny (test models, single heads) to large:
// below kMinParallelWork multiply-adds a parallel region costs more than it saves, so the
// loop runs on the calling thread. Results are identical either way (disjoint outputs).
#pragma once

#include <cstdint>

#include "core/parallel.h"

namespace moex::ops {

inline constexpr int64_t kMinParallelWork = 1 << 15;

template <typename Fn>
void parallel_for_work(int64_t n, int64_t work_per_item, Fn&& fn) {
  if (n <= 0) return;
  if (n * work_per_item < kMinParallelWork) {
    fn(int64_t{0}, n);
    return;
  }
  parallel_for(n, fn);
}

// Items per block when n items (query heads) are split into blocks, at most `cap` per block:
// as many as leave a unit of work for every thread, counting `copies` units per block (rows,
// kv heads, tiles), halving the block while the threads outnumber the units.
inline int64_t block_size_for_threads(int64_t n, int64_t cap, int64_t copies) {
  int64_t per = n < cap ? n : cap;
  while (per > 1 && copies * ((n + per - 1) / per) < num_threads()) per = (per + 1) / 2;
  return per;
}

// The item at slot i of n when items are handed out first, last, second, second last, ...:
// causal attention's rows cost more the later they are, so a contiguous run of slots (one
// thread's share of parallel_for) pairs cheap items with dear ones.
inline int64_t zigzag_slot(int64_t i, int64_t n) { return i % 2 == 0 ? i / 2 : n - 1 - i / 2; }

}  // namespace moex::ops
