// Rewinding a sequence whose recurrent states cannot be truncated (short conv, Gated DeltaNet,
// Mamba-2), for speculative decoding: the caller copies the states before a step of several
// tokens (copy_recurrent_states) and, when only some of them are kept, puts them back here
// and runs the kept tokens again.
#pragma once

#include <cstdint>
#include <vector>

#include "model/engine/sequence.h"

namespace moex::model::engine {

// Makes seq hold its first `position` positions (0..seq.position()): every KV cache keeps
// its first `position` rows and the recurrent states become `states` (per layer, as
// copy_recurrent_states gave them when seq was at `position`; empty when seq has none).
// moex::Error, seq unchanged, for a position outside 0..position() or states whose layer
// count or sizes are not seq's.
void rewind_with_states(Sequence& seq, int64_t position,
                        const std::vector<std::vector<float>>& states);

}  // namespace moex::model::engine
