// Host scratch of one MoE block call (and of the CPU backend's paths), grown on demand and
// reused: after the first call of a given shape, further calls allocate nothing. One
// workspace per thread running blocks; an engine shares one across all its layers.
#pragma once

#include <cstdint>
#include <vector>

namespace moex::moe {

class MoeWorkspace {
 public:
  static constexpr int kFloatSlots = 10, kIntSlots = 6;
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
  kSlotOwnedX,       // expert parallelism: a row per owned pair, and its weight 1
  kSlotOwnedScores,
  kNumMoeFloatSlots
};
enum MoeIntSlot {
  kSlotLhs, kSlotRhs, kSlotOrder, kSlotCounts, kSlotZeros, kSlotOwnedIds, kNumMoeIntSlots
};
static_assert(kNumMoeFloatSlots == MoeWorkspace::kFloatSlots &&
              kNumMoeIntSlots == MoeWorkspace::kIntSlots);

}  // namespace moex::moe
