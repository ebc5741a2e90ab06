// An engine together with the token ids it has run, so that a new prompt sharing a prefix
// with them (a chat conversation rendered again each turn) runs only the tokens after it.
#pragma once

#include <cstdint>
#include <vector>

#include "model/engine/engine.h"

namespace moex::model::engine {

// Length of the longest common prefix of a and b.
int64_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b);

// How many of `held` (the ids an engine has run) a prefill of `prompt` can keep: their
// common prefix, less one when it covers the whole prompt (the last prompt token must run
// again to give its logits). 0 for an empty prompt.
int64_t reusable_prefix(const std::vector<int32_t>& held, const std::vector<int32_t>& prompt);

// Rewinds `seq`, which holds the ids `held`, to its first `keep` positions (keep <= held
// size), or to position 0 where it cannot rewind (short-conv layers); `held` shrinks to match.
// Returns the positions kept: `keep`, or 0.
int64_t rewind_to(Sequence& seq, std::vector<int32_t>& held, int64_t keep);

class EngineSession {
 public:
  explicit EngineSession(Engine& engine) : engine_(engine) { engine_.reset(); }

  struct Prefill {
    const float* logits = nullptr;  // of the prompt's last token
    int64_t reused = 0;             // prompt tokens kept from before
    int64_t prefilled = 0;          // tokens run now (prompt.size() - reused)
    bool rebuilt = false;           // the engine could not truncate: reset and ran it all
  };
  // Runs `prompt`, keeping the engine's entries for reusable_prefix(ids(), prompt) tokens:
  // ids beyond them are truncated away, or, for an engine that cannot truncate (short-conv
  // layers), the engine is reset and the whole prompt runs. Errors as Engine::forward.
  Prefill prefill(const std::vector<int32_t>& prompt);
  const float* decode(int32_t token);
  void reset();
  // For a caller that runs sequence() itself (speculative decoding: a pass of several tokens,
  // then a rewind to those it keeps): ran() records tokens it ran, dropped() the last n it
  // took back. moex::Error when ids() would no longer match the sequence's position.
  void ran(const int32_t* tokens, int64_t n);
  void dropped(int64_t n);

  const std::vector<int32_t>& ids() const { return ids_; }  // what the engine holds
  Engine& engine() { return engine_; }

 private:
  Engine& engine_;
  std::vector<int32_t> ids_;
};

}  // namespace moex::model::engine
