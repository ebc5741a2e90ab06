// For tests that bound what hostile input makes the program allocate: the test binary's global
// operator new and delete, replaced in largest_allocation_test_util.cc, record the largest single
// request while tracking is on. A test binary lists that file among its sources once (the
// replacements are ordinary definitions, one per program) and includes this header where it
// measures.
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
