// OpenMP-backed thread count.
#include "core/parallel.h"

#include <omp.h>

#include <atomic>

namespace moex {
namespace {
std::atomic<int> g_threads{0};
}

int num_threads() {
  int n = g_threads.load();
  return n > 0 ? n : omp_get_num_procs();
}

void set_num_threads(int n) { g_threads.store(n < 1 ? 1 : n); }

}  // namespace moex
