// The state one sequence carries between forward passes: its KV cache per attention or MLA
// layer, its recurrent state per short-conv (LFM2), Gated DeltaNet (Qwen3-Next) or Mamba-2
// (Nemotron-H) layer, laid out by each layer's Mixer, and its position. An Engine holds one for
// its own forward()/decode(); a server makes one per slot (Engine::new_sequence) and decodes
// several together (Engine::decode_batch), each at its own position.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/cpu/attention.h"
#include "backend/model_backend.h"
#include "model/engine/scratch_grow.h"

namespace moex::model::engine {

struct KvChunk;  // sequence_state.h

class Sequence {
 public:
  int64_t position() const { return pos_; }
  int64_t context() const { return context_; }
  // Back to position 0 (KV caches cleared, recurrent states zeroed).
  void reset();
  // Whether truncate() works for every position: no short-conv or Gated DeltaNet layer, whose
  // state mixes past positions and cannot be rewound.
  bool can_truncate() const;
  // Back to `position` (0..position()), keeping the first `position` tokens' KV entries;
  // false (nothing changed) where can_truncate() is not and position is neither 0 nor
  // position(). moex::Error for a position outside 0..position().
  bool truncate(int64_t position);
  // Bytes of the KV caches (allocated for the whole context).
  int64_t kv_cache_bytes() const;

  // A layer's state, for that layer's Mixer (mixer.h): its KV cache (attention, MLA) or its
  // recurrent state (short conv, Gated DeltaNet, Mamba-2).
  ops::KvCache& kv_cache(int64_t layer) { return caches_[size_t(layer)]; }
  ActivationBuffer& recurrent_state(int64_t layer) { return conv_state_[size_t(layer)]; }
  const ops::KvCache& kv_cache(int64_t layer) const { return caches_[size_t(layer)]; }
  const ActivationBuffer& recurrent_state(int64_t layer) const {
    return conv_state_[size_t(layer)];
  }
  int64_t layers() const { return int64_t(caches_.size()); }
  // The backend whose memory holds its caches and states (its engine's).
  const backend::ModelBackend& backend() const { return *be_; }

 private:
  friend class Engine;
  friend class ExpertParallelSteps;  // a follower's copies, numbered as the leader's
  friend void load_state(Sequence&, const std::vector<KvChunk>&, int64_t,
                         const std::vector<std::vector<float>>&);
  friend void rewind_with_states(Sequence&, int64_t,
                                 const std::vector<std::vector<float>>&);
  std::vector<ops::KvCache> caches_;            // per layer (empty for short-conv layers)
  // Per layer: LFM2's [(kernel-1)][H], oldest first; Gated DeltaNet's conv state then its
  // recurrent state (GatedDeltaNet::state_size()); empty for attention layers.
  std::vector<ActivationBuffer> conv_state_;
  int64_t pos_ = 0, context_ = 0;
  const backend::ModelBackend* be_ = nullptr;  // whose memory the states are in
  const void* owner_ = nullptr;  // the Engine that made it
  int32_t id_ = 0;               // its number in that engine (expert-parallel serving)
};

// One sequence's part of a batched step (Engine::forward_batch): n tokens run at its position.
struct SequenceChunk {
  Sequence* seq = nullptr;
  const int32_t* tokens = nullptr;
  int64_t n = 0;
  bool logits = true;  // whether the caller reads the logits of its last token
  // The logits of every one of its n tokens, not only the last (speculative verification);
  // overrides `logits`.
  bool every_row = false;
  // Rows of logits the part takes in forward_batch's result.
  int64_t logit_rows() const { return every_row ? n : 1; }
};

}  // namespace moex::model::engine
