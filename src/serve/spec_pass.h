// Speculative decoding in the serving scheduler (scheduler.h): one slot's pass, the token it
// runs next followed by drafts looked up in its prompt and output (prompt lookup,
// generate/ngram_draft.h), and taking back the drafts its request did not keep.
#pragma once

#include <cstdint>
#include <vector>

#include "generate/ngram_draft.h"
#include "model/engine/engine.h"

namespace moex::serve {

// `moex serve --spec ngram|mtp` (server-wide, as vLLM's and llama.cpp's servers set it at launch).
struct SpecOptions {
  bool on = false;
  int64_t draft = 3;          // the most draft tokens per pass, 1..generate::kMaxDraftTokens
  generate::NgramArgs ngram;  // suffix lengths looked up
  // --spec mtp: each slot drafts with the engine's multi-token-prediction module instead
  // (generate/mtp_draft.h; the engine opened with EngineOptions::mtp).
  bool mtp = false;
};

// Draft tokens a pass may carry: at most `draft`, and no more than the positions left after
// the pass's first token (`room` positions are free in the context) or the tokens the request
// may still output after the first (`left`). 0 when none fit.
int64_t draft_length(int64_t draft, int64_t room, int64_t left);

class SpecPass {
 public:
  // tokens() becomes `next` followed by up to `k` drafts that `drafter` proposes over `held`
  // (the ids the sequence holds) and `next`; just `next` for k < 1 or no drafter. When the
  // pass has drafts and `seq` cannot be truncated (recurrent states), its states are copied.
  void begin(const model::engine::Sequence& seq, int32_t next, const std::vector<int32_t>& held,
             int64_t k, generate::Drafter* drafter);
  const std::vector<int32_t>& tokens() const { return tokens_; }
  int64_t size() const { return int64_t(tokens_.size()); }

  // After the pass ran on `seq`: it keeps the first `kept` (1..size()) tokens. Returns how
  // many of them, tokens()[0..returned), must run again on `seq` (no logits needed): for a
  // sequence with recurrent states that kept fewer than it ran, which is rewound to before the
  // pass with its states put back; 0 otherwise (its KV caches truncated, or everything kept).
  // moex::Error when `seq` is not where the pass left it or kept is out of range.
  int64_t keep(model::engine::Sequence& seq, int64_t kept);

 private:
  std::vector<int32_t> tokens_, history_;
  int64_t start_ = 0;   // seq's position before the pass
  bool saved_ = false;  // states_ holds seq's recurrent states at start_
  std::vector<std::vector<float>> states_;
};

}  // namespace moex::serve
