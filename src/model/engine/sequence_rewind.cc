// rewind_with_states (see sequence_rewind.h).
#include "model/engine/sequence_rewind.h"

#include <algorithm>

#include "core/error.h"
#include "model/engine/sequence_state.h"

namespace moex::model::engine {

void rewind_with_states(Sequence& seq, int64_t position,
                        const std::vector<std::vector<float>>& states) {
  if (position < 0 || position > seq.pos_)
    fail("rewind_with_states: position ", position, " outside the ", seq.pos_, " tokens held");
  const size_t layers = size_t(seq.layers());
  const bool recurrent = recurrent_state_floats(seq) > 0;
  if (recurrent ? states.size() != layers : !states.empty())
    fail("rewind_with_states: recurrent states of ", states.size(), " layers, the sequence has ",
         recurrent ? layers : 0);
  for (size_t l = 0; recurrent && l < layers; ++l)
    if (states[l].size() != seq.conv_state_[l].size())
      fail("rewind_with_states: layer ", l, "'s recurrent state has ", states[l].size(),
           " floats, the sequence's ", seq.conv_state_[l].size());
  for (size_t l = 0; l < layers; ++l) {
    seq.caches_[l].truncate(position);
    if (recurrent) std::copy(states[l].begin(), states[l].end(), seq.conv_state_[l].begin());
  }
  seq.pos_ = position;
}

}  // namespace moex::model::engine
