// Host scratch of one MoE block call (and of the CPU backend's paths), grown on demand and
// reused: after the first call of a given shape, further calls allocate nothing. One
// workspace per thread running blocks; an engine shares one across all its layers.
#pragma once

#include <cstdint>
#include <vector>

namespace moex::moe {

class MoeWorkspace {
 public:
  static constexpr int kFloatSlots = 11, kIntSlots = 7;
  // Grows buffer slot `i` to hold n elements; returns its data.
  float* floats(int i, int64_t n);
  int32_t* ints(int i, int64_t n);
  // Bytes its buffers hold now.
  int64_t bytes() const;

 private:
  std::vector<float> f_[kFloatSlots];
  std::vector<int32_t> i_[kIntSlots];
};

// The slots, one list for the block and the backends that share its workspace.
enum MoeFloatSlot {
  kSlotGateOut,
  kSlotUpOut,
  kSlotDownOut,
  kSlotUnsorted,
  kSlotScaledX,
  kSlotOnes,
  kSlotSharedOut,
  kSlotSharedGate,
  kSlotOwnedX,       // expert parallelism: the rows of one owned-pair count, gathered...
  kSlotOwnedScores,
  kSlotOwnedOut,     // ...and their output before it is scattered back
  kNumMoeFloatSlots
};
enum MoeIntSlot {
  kSlotLhs, kSlotRhs, kSlotOrder, kSlotCounts, kSlotZeros, kSlotOwnedIds, kSlotOwnedRows, kNumMoeIntSlots
};
static_assert(kNumMoeFloatSlots == MoeWorkspace::kFloatSlots &&
              kNumMoeIntSlots == MoeWorkspace::kIntSlots);

}  // namespace moex::moe
