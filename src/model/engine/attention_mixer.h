// The attention mixer: q/k/v projections of all the step's rows at once, then per sequence
// RoPE, the family's q/k norms, its KV cache and attention, then the output projection.
#pragma once

#include <cstdint>

#include "model/engine/mixer.h"

namespace moex::model::engine {

class AttentionMixer final : public Mixer {
 public:
  AttentionMixer(const backend::ModelBackend& be, const ModelConfig& cfg, int64_t layer,
                 const AttentionWeights& w, const ops::Rope& rope, AttentionScratch& scratch);
  void forward(const MixerStep& step) override;
  void init_state(Sequence& seq, int64_t context) const override;

 private:
  void qk_norm(float* q, float* k, int64_t n, bool after_rope) const;
  void attend(const SequenceRows& s);  // scratch q, k, v rows -> att rows

  const backend::ModelBackend& be_;
  const ModelConfig& cfg_;
  const LayerPlan& plan_;
  int64_t layer_;
  const AttentionWeights& w_;
  const ops::Rope& rope_;
  AttentionScratch& s_;
};

}  // namespace moex::model::engine
