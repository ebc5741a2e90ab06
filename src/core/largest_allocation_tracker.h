// The tracker of largest_allocation_test_util.h without the operator new / delete it installs:
// for a header shared by several source files of one test binary (exactly one of them includes
// largest_allocation_test_util.h, which defines the replacements).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace moex::testing {

inline std::atomic<bool> g_track_allocations{false};
inline std::atomic<size_t> g_largest_allocation{0};

// Records from construction until stop(): the largest single operator new request.
class LargestAllocation {
 public:
  LargestAllocation() {
    g_largest_allocation = 0;
    g_track_allocations = true;
  }
  ~LargestAllocation() { g_track_allocations = false; }
  size_t stop() {
    g_track_allocations = false;
    return g_largest_allocation.load();
  }
};

}  // namespace moex::testing
