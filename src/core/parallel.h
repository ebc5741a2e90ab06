// Thread count and a static-schedule parallel loop (OpenMP underneath). Work is split into
// fixed contiguous chunks, and each index is computed by exactly one thread, so kernels
// that write disjoint outputs per index are bit-identical whatever the thread count.
#pragma once

#include <omp.h>

#include <cstdint>

namespace moex {

int num_threads();            // threads used by parallel_for (default: all cores)
void set_num_threads(int n);  // n >= 1

// Calls fn(begin_i, end_i) over [0, n) split into contiguous chunks, one per thread.
template <typename Fn>
void parallel_for(int64_t n, Fn&& fn) {
  const int nt = num_threads();
  if (nt <= 1 || n <= 1) {
    if (n > 0) fn(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    const int t = omp_get_thread_num();
    const int T = omp_get_num_threads();
    const int64_t lo = n * t / T, hi = n * (t + 1) / T;
    if (hi > lo) fn(lo, hi);
  }
}

}  // namespace moex
