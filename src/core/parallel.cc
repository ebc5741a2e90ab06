// The persistent thread pool behind parallel_for (see parallel.h).
#include "core/parallel.h"

#include <immintrin.h>
#include <sched.h>

#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace moex {
namespace {

std::atomic<int> g_threads{0};

int default_threads() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const unsigned hc = std::thread::hardware_concurrency();
  return hc > 0 ? int(hc) : 1;
}

thread_local bool t_in_chunk = false;

// One job at a time (callers serialize on job_mutex). A job is published by storing a new
// job word, (sequence number << 16) | threads; worker w (1-based) runs chunk w if w < threads,
// then decrements `pending`. Workers that do not take part learn it from the same word, so a
// slow one can never mistake a later job's thread count for its own.
class Pool {
 public:
  static Pool& instance() {
    static Pool* pool = new Pool();  // never destroyed: workers may outlive static teardown
    return *pool;
  }

  void run(int64_t n, int threads, detail::ChunkFn call, void* ctx) {
    if (threads > 0xFFFF) threads = 0xFFFF;  // the job word holds 16 bits of it
    std::lock_guard<std::mutex> lock(job_mutex_);
    grow(threads - 1);
    n_ = n;
    threads_ = threads;
    call_ = call;
    ctx_ = ctx;
    error_ = nullptr;
    pending_.store(threads - 1, std::memory_order_relaxed);
    ++sequence_;
    job_.store((sequence_ << 16) | uint64_t(threads));  // seq_cst: pairs with sleepers_
    if (sleepers_.load() > 0) job_.notify_all();
    run_chunk(0);
    // Spin, then yield: with more threads than cores a worker may need this core to finish.
    for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin)
      if (spin < 20000)
        _mm_pause();
      else
        std::this_thread::yield();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void grow(int workers) {
    while (int(workers_.size()) < workers) {
      // The job word as of now, before this job is published: a thread that starts late must
      // still see the coming job as new.
      const int id = int(workers_.size()) + 1;
      const uint64_t seen = job_.load();
      workers_.emplace_back([this, id, seen] { worker_loop(id, seen); });
      workers_.back().detach();
    }
  }

  void run_chunk(int t) {
    const int64_t lo = n_ * t / threads_, hi = n_ * (t + 1) / threads_;
    if (hi <= lo) return;
    t_in_chunk = true;
    try {
      call_(ctx_, lo, hi);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
    }
    t_in_chunk = false;
  }

  void worker_loop(int id, uint64_t seen) {
    for (;;) {
      // Spin about a millisecond (~20k pauses), then sleep until the next job.
      uint64_t job = job_.load(std::memory_order_acquire);
      for (int spin = 0; job == seen && spin < 20000; ++spin) {
        _mm_pause();
        job = job_.load(std::memory_order_acquire);
      }
      if (job == seen) {
        sleepers_.fetch_add(1);  // seq_cst: the publisher either sees us or we see its job
        for (job = job_.load(); job == seen; job = job_.load()) job_.wait(seen);
        sleepers_.fetch_sub(1);
      }
      seen = job;
      if (id < int(job & 0xFFFF)) {
        run_chunk(id);
        pending_.fetch_sub(1, std::memory_order_acq_rel);
      }
    }
  }

  std::mutex job_mutex_, error_mutex_;
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> job_{0};
  uint64_t sequence_ = 0;  // publisher side only
  std::atomic<int> pending_{0}, sleepers_{0};
  // Job fields: written before the job word is stored, read by workers after they load it.
  int64_t n_ = 0;
  int threads_ = 0;
  detail::ChunkFn call_ = nullptr;
  void* ctx_ = nullptr;
  std::exception_ptr error_;
};

}  // namespace

int num_threads() {
  const int n = g_threads.load();
  return n > 0 ? n : default_threads();
}

void set_num_threads(int n) { g_threads.store(n < 1 ? 1 : n); }

namespace detail {
void run_parallel(int64_t n, int threads, ChunkFn call, void* ctx) {
  Pool::instance().run(n, threads, call, ctx);
}
bool in_parallel_region() { return t_in_chunk; }
}  // namespace detail

}  // namespace moex
