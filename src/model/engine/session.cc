// EngineSession: prefix reuse over one engine's KV caches (see session.h).
#include "model/engine/session.h"

#include <algorithm>

#include "core/error.h"

namespace moex::model::engine {

int64_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return int64_t(i);
}

int64_t reusable_prefix(const std::vector<int32_t>& held, const std::vector<int32_t>& prompt) {
  if (prompt.empty()) return 0;
  return std::min(common_prefix(held, prompt), int64_t(prompt.size()) - 1);
}

int64_t rewind_to(Sequence& seq, std::vector<int32_t>& held, int64_t keep) {
  if (!seq.truncate(keep)) {
    // Short-conv layers cannot rewind their recurrent state: start over.
    seq.reset();
    keep = 0;
  }
  held.resize(size_t(keep));
  return keep;
}

EngineSession::Prefill EngineSession::prefill(const std::vector<int32_t>& prompt) {
  if (prompt.empty()) fail("prefill: empty prompt");
  Prefill r;
  const int64_t keep = reusable_prefix(ids_, prompt);
  r.reused = rewind_to(engine_.sequence(), ids_, keep);
  r.rebuilt = r.reused != keep;
  const std::vector<int32_t> rest(prompt.begin() + r.reused, prompt.end());
  r.logits = engine_.prefill(rest);  // throws before running anything when it does not fit
  ids_.insert(ids_.end(), rest.begin(), rest.end());
  r.prefilled = int64_t(rest.size());
  return r;
}

const float* EngineSession::decode(int32_t token) {
  const float* logits = engine_.decode(token);
  ids_.push_back(token);
  return logits;
}

void EngineSession::ran(const int32_t* tokens, int64_t n) {
  ids_.insert(ids_.end(), tokens, tokens + n);
  if (int64_t(ids_.size()) != engine_.position())
    fail("session: ", ids_.size(), " ids recorded, but the sequence is at position ",
         engine_.position());
}

void EngineSession::dropped(int64_t n) {
  if (n < 0 || n > int64_t(ids_.size()) || int64_t(ids_.size()) - n != engine_.position())
    fail("session: dropping ", n, " of ", ids_.size(), " ids leaves them at odds with the "
         "sequence's position ", engine_.position());
  ids_.resize(ids_.size() - size_t(n));
}

void EngineSession::reset() {
  engine_.reset();
  ids_.clear();
}

}  // namespace moex::model::engine
