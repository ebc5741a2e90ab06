// Thread count and a static-schedule parallel loop on a persistent thread pool. Work is split
// into fixed contiguous chunks, and each index is computed by exactly one thread, so kernels
// that write disjoint outputs per index are bit-identical whatever the thread count.
//
// The pool's workers spin (with `pause`) for about a millisecond after each job before they
// sleep: decode calls parallel_for twice per MoE layer, every few hundred microseconds, and
// waking sleeping threads per call cost 4-6% of the Qwen3 layer's time at 2 threads (OpenMP's
// default passive wait: 830 vs 786-799 us per layer with OMP_WAIT_POLICY=active, 2026-11-29).
// A chunk whose worker has not started it when another thread is free (a worker asleep, or
// descheduled because other processes share the cores) is run by that thread: two 2-thread
// processes on 2 cores ran model_engine_test in 32-34 s each with fixed owners, 13.6-13.9 s
// this way (8.4 s alone; AMD EPYC Zen 4, 2026-12-07).
#pragma once

#include <cstdint>
#include <utility>

namespace moex {

int num_threads();            // threads used by parallel_for (default: the CPUs we may run on)
void set_num_threads(int n);  // n >= 1

namespace detail {
using ChunkFn = void (*)(void* ctx, int64_t begin, int64_t end);
// Runs call(ctx, lo_t, hi_t) for t in [0, threads), lo_t = n*t/threads, hi_t = n*(t+1)/threads
// (empty chunks skipped), chunk 0 on the calling thread. Rethrows the first exception a chunk
// threw, after every chunk has finished.
void run_parallel(int64_t n, int threads, ChunkFn call, void* ctx);
bool in_parallel_region();  // true on a thread that is running a chunk
}  // namespace detail

// Calls fn(begin_i, end_i) over [0, n) split into contiguous chunks, one per thread. Inside a
// chunk (nested use) it runs fn(0, n) on the calling thread.
template <typename Fn>
void parallel_for(int64_t n, Fn&& fn) {
  const int nt = num_threads();
  if (nt <= 1 || n <= 1 || detail::in_parallel_region()) {
    if (n > 0) fn(int64_t{0}, n);
    return;
  }
  using F = std::remove_reference_t<Fn>;
  detail::run_parallel(
      n, nt, [](void* ctx, int64_t lo, int64_t hi) { (*static_cast<F*>(ctx))(lo, hi); },
      const_cast<void*>(static_cast<const void*>(&fn)));
}

}  // namespace moex
