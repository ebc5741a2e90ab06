// The replacements of the global operator new and delete that LargestAllocation reads
// (largest_allocation_test_util.h): ordinary definitions, so this file is linked into a test
// binary once rather than included by every test source that measures (several of them, in
// separate unity batches or without a unity build, would define them twice).
#include "core/largest_allocation_test_util.h"

// GCC sees free() on memory from this operator new and warns; the pair is consistent.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(size_t n) {
  using moex::testing::g_largest_allocation;
  if (moex::testing::g_track_allocations.load(std::memory_order_relaxed) &&
      n > g_largest_allocation.load(std::memory_order_relaxed))
    g_largest_allocation.store(n, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
