// SpecPass (see spec_pass.h).
#include "serve/spec_pass.h"

#include <algorithm>

#include "core/error.h"
#include "model/engine/sequence_state.h"

namespace moex::serve {

namespace eng = model::engine;

int64_t draft_length(int64_t draft, int64_t room, int64_t left) {
  return std::max<int64_t>(0, std::min({draft, room - 1, left - 1}));
}

void SpecPass::begin(const eng::Sequence& seq, int32_t next, const std::vector<int32_t>& held,
                     int64_t k, generate::Drafter* drafter) {
  start_ = seq.position();
  saved_ = false;
  tokens_.assign(1, next);
  if (k < 1 || drafter == nullptr) return;
  history_.assign(held.begin(), held.end());
  history_.push_back(next);
  const std::vector<int32_t> drafts = drafter->propose(history_, k);
  tokens_.insert(tokens_.end(), drafts.begin(),
                 drafts.begin() + std::min<int64_t>(k, int64_t(drafts.size())));
  if (tokens_.size() > 1 && !seq.can_truncate()) {
    eng::copy_recurrent_states(seq, states_);
    saved_ = true;
  }
}

int64_t SpecPass::keep(eng::Sequence& seq, int64_t kept) {
  const int64_t n = size();
  if (kept < 1 || kept > n || seq.position() != start_ + n)
    fail("speculative pass: keep ", kept, " of ", n, " tokens run at position ", start_,
         " (the sequence is at ", seq.position(), ")");
  if (kept == n) return 0;
  if (!saved_) {
    if (!seq.truncate(start_ + kept))
      fail("speculative pass: the sequence cannot be truncated and its states were not saved");
    return 0;
  }
  eng::rewind_with_states(seq, start_, states_);
  return kept;
}

}  // namespace moex::serve
