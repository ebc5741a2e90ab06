// The small weights of the whole-model ops (norm weights, q/k norms, attention sinks, the
// recurrent mixers' vectors) in the memory of the backend that runs them. The CPU backend's
// ops read them in place (views of the checkpoint, or converted copies); a backend with its
// own memory gets a copy of each, uploaded once at open, and FloatVec::data() then points
// there. Linear layers, embedding tables, multi-linear stacks and RoPE tables are not here:
// the backend places those itself, named by their host view (model_backend.h). The MoE
// blocks' weights stay on the host, where the MoE blocks run (ffn.cc).
#pragma once

#include "backend/model_backend.h"
#include "model/engine/model_weights.h"

namespace moex::model::engine {

// A copy of v's values in be's memory when be's memory is not the host's (nothing otherwise).
void place_small_weight(const backend::ModelBackend& be, ops::FloatVec& v);
// v, placed (for vectors a mixer derives at construction).
ops::FloatVec placed(const backend::ModelBackend& be, ops::FloatVec v);
// place_small_weight on every small weight of w that a whole-model op reads.
void place_small_weights(const backend::ModelBackend& be, ModelWeights& w);

}  // namespace moex::model::engine
