// Sequence: reset, truncate and the size of a sequence's decode state.
#include "model/engine/sequence.h"

#include <algorithm>

#include "core/error.h"

namespace moex::model::engine {

void Sequence::reset() {
  for (auto& c : caches_) c.clear();
  for (auto& s : conv_state_) be_->zero(s.data(), s.size() * int64_t(sizeof(float)));
  pos_ = 0;
}

bool Sequence::can_truncate() const {
  return std::all_of(conv_state_.begin(), conv_state_.end(),
                     [](const ActivationBuffer& s) { return s.empty(); });
}

bool Sequence::truncate(int64_t position) {
  if (position < 0 || position > pos_)
    fail("truncate: position ", position, " outside the ", pos_, " tokens held");
  if (position == pos_) return true;
  if (position == 0) {
    reset();
    return true;
  }
  if (!can_truncate()) return false;
  for (auto& c : caches_) c.truncate(position);
  pos_ = position;
  return true;
}

int64_t Sequence::kv_cache_bytes() const {
  int64_t total = 0;
  for (const ops::KvCache& c : caches_) total += c.bytes();
  return total;
}

}  // namespace moex::model::engine
