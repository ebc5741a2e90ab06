// The state one sequence carries between forward passes: its KV cache per attention layer,
// its short-conv state per short-conv layer (LFM2) and its position. An Engine holds one for
// its own forward()/decode(); a server makes one per slot (Engine::new_sequence) and decodes
// several together (Engine::decode_batch), each at its own position.
#pragma once

#include <cstdint>
#include <vector>

#include "model/ops/attention.h"

namespace moex::model::engine {

class Sequence {
 public:
  int64_t position() const { return pos_; }
  int64_t context() const { return context_; }
  // Back to position 0 (KV caches cleared, short-conv states zeroed).
  void reset();
  // Whether truncate() works for every position: no short-conv layer, whose state mixes the
  // last kernel-1 positions and cannot be rewound.
  bool can_truncate() const;
  // Back to `position` (0..position()), keeping the first `position` tokens' KV entries;
  // false (nothing changed) where can_truncate() is not and position is neither 0 nor
  // position(). moex::Error for a position outside 0..position().
  bool truncate(int64_t position);
  // Bytes of the KV caches (allocated for the whole context).
  int64_t kv_cache_bytes() const;

 private:
  friend class Engine;
  std::vector<ops::KvCache> caches_;            // per layer (empty for short-conv layers)
  std::vector<std::vector<float>> conv_state_;  // per layer: [(kernel-1)][H], oldest first
                                                // (empty for attention layers)
  int64_t pos_ = 0, context_ = 0;
  const void* owner_ = nullptr;  // the Engine that made it
};

}  // namespace moex::model::engine
