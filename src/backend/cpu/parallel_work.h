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

}  // namespace moex::ops
