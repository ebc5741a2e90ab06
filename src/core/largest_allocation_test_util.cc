// The replaced global operator new and delete of a test binary that measures its largest
// allocation (largest_allocation_test_util.h): one definition per program, so this file is a
// source of those test binaries and of no library.
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
