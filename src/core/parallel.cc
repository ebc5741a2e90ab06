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

constexpr int kMaxThreads = 1024;  // per job; the job word has 16 bits for it

// One job at a time (callers serialize on job_mutex). A job is published by storing a new
// job word, (sequence number << 16) | threads. Chunk t (t >= 1) is run by whoever claims it
// first for this job's sequence number: worker t when it sees the job, or, when worker t is
// late (asleep, or descheduled because other processes share the cores), the caller or another
// worker once its own chunk is done. Chunk bounds never depend on who runs a chunk, so results
// stay bit-identical. A claim only succeeds while the job is unfinished (the caller waits for
// every chunk), so a late worker can never run a later job's chunk with an earlier job's word.
class Pool {
 public:
  static Pool& instance() {
    static Pool* pool = new Pool();  // never destroyed: workers may outlive static teardown
    return *pool;
  }

  void run(int64_t n, int threads, detail::ChunkFn call, void* ctx) {
    if (threads > kMaxThreads) threads = kMaxThreads;
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
    run_unclaimed(sequence_, threads);
    // Spin, then yield: with more threads than cores a worker may need this core to finish.
    for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin)
      if (spin < 20000)
        _mm_pause();
      else
        std::this_thread::yield();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  // Marks chunk t as taken for job `seq`; false if someone already took it (or a later job's).
  bool claim(int t, uint64_t seq) {
    std::atomic<uint64_t>& slot = claims_[size_t(t)];
    uint64_t v = slot.load(std::memory_order_relaxed);
    while (v < seq)
      if (slot.compare_exchange_weak(v, seq, std::memory_order_acq_rel)) return true;
    return false;
  }

  void run_claimed(int t) {
    run_chunk(t);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }

  void run_unclaimed(uint64_t seq, int threads) {
    for (int t = 1; t < threads; ++t)
      if (claim(t, seq)) run_claimed(t);
  }

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
      const uint64_t seq = job >> 16;
      const int threads = int(job & 0xFFFF);
      if (id < threads) {
        if (claim(id, seq)) run_claimed(id);
        run_unclaimed(seq, threads);
      }
    }
  }

  std::mutex job_mutex_, error_mutex_;
  std::vector<std::thread> workers_;
  // claims_[t]: the sequence number of the last job whose chunk t was taken. Fixed size, so
  // that no worker ever reads a slot while it moves.
  std::atomic<uint64_t> claims_[kMaxThreads] = {};
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
