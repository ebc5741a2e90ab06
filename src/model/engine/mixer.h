// Layers are one interface: a Mixer is the first half of a decoder layer (attention, multi-head
// latent attention, LFM2's short conv, Gated DeltaNet, Mamba-2), built from the layer plan by
// make_mixer, owning how its per-sequence state is laid out. The engine's layer loop calls
// forward() once per layer whatever the kind.
#pragma once

#include "model/engine/scratch_grow.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/model_backend.h"
#include "model/engine/decode_profile.h"
#include "model/engine/model_weights.h"
#include "model/engine/sequence.h"
#include "model/model_config.h"
#include "backend/cpu/rope.h"

namespace moex::model::engine {

// Rows [row0, row0 + rows) of a step: consecutive positions of one sequence, starting at its
// position (which the engine advances after the last layer).
struct SequenceRows {
  Sequence* seq = nullptr;
  int64_t row0 = 0, rows = 0;
};

struct MixerStep {
  const std::vector<SequenceRows>& segments;  // the step's rows by sequence, n in all
  int64_t n = 0;
  const float* x = nullptr;  // [n][hidden], the normed input
  float* out = nullptr;      // [n][hidden]
  DecodeOpClock& clock;      // each mixer laps its own op groups
};

class Mixer {
 public:
  virtual ~Mixer() = default;
  // x -> out for the step's rows; each sequence's state of this layer advances by its rows.
  virtual void forward(const MixerStep& step) = 0;
  // This layer's state in a new sequence of `context` positions: a KV cache, or a zeroed
  // recurrent state.
  virtual void init_state(Sequence& seq, int64_t context) const = 0;
};

// Activations of the attention layers for the step's rows, shared by every attention layer
// of one engine (one engine runs one step at a time).
struct AttentionScratch {
  ActivationBuffer q, k, v, att;
  ActivationBuffer qg, gate;  // gated attention: q_proj's output, the gate rows
  // Sizes for n rows of the widest layer of `cfg`.
  void ensure(const backend::ModelBackend& be, const ModelConfig& cfg, int64_t n);
};

// Scratch of the recurrent and latent mixers (their own headers), one of each per engine.
struct MixerScratch {
  AttentionScratch attention;
  ShortConvScratch conv;
  GatedDeltaNetScratch gdn;
  Mamba2Scratch mamba;
  MlaScratch mla;
  int64_t bytes() const;  // what the vectors hold
};

// The RoPE table of `layer`: its head_dim's (MLA: the decoupled key's rope_dim) for attention
// and MLA layers, an empty one for the others.
ops::Rope layer_rope(const ModelConfig& cfg, int64_t layer);

// The mixer of `layer` (nullptr for a layer without one: Nemotron-H's FFN-only blocks).
// `weights`, `rope` and `scratch` must outlive it.
std::unique_ptr<Mixer> make_mixer(const backend::ModelBackend& be, const ModelConfig& cfg, int64_t layer,
                                  const LayerWeights& weights, const ops::Rope& rope,
                                  MixerScratch& scratch);

}  // namespace moex::model::engine
