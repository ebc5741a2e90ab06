// Speculative decoding with the checkpoint's multi-token-prediction module as the draft
// (DeepSeek-V3, GLM-4.5; model/engine/mtp_module.h, docs/speculative.md): the module's row at
// position p takes the main model's final hidden state at p and the token at p + 1 and
// predicts the token at p + 2, so after each verification pass it drafts the token after the
// one just output; further drafts run the module again on its own output and draft.
//
// The bookkeeping: the main sequence is at position P (tokens 0..P-1 run) and the history
// holds P + 1 tokens (the last one output, not run yet). The module's sequence is at m <= P and
// `pending_` holds the main hidden states of positions m..P-1, whose next tokens are now known:
// propose() runs them, drafts, and cuts the module's rows past P - 1 again; verify() adds the
// pass's hidden states to `pending_`, keep() drops those of the tokens not kept.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "generate/ngram_draft.h"
#include "generate/engine_verifier.h"
#include "generate/speculative.h"
#include "model/engine/engine.h"

namespace moex::generate {

class MtpSpeculator final : public Drafter {
 public:
  // `engine` opened with EngineOptions::mtp; `seq` one of its sequences at position 0
  // (moex::Error otherwise). Both must outlive this.
  MtpSpeculator(model::engine::Engine& engine, model::engine::Sequence& seq);

  // Runs the prompt on the sequence (Engine::forward, its hidden states captured), then the
  // module's rows of the prompt's tokens but the last (their next tokens are known), and
  // returns the main model's logits of the last token.
  const float* prefill(const TokenId* tokens, int64_t n);
  // For an owner that runs the main sequence itself (chat's session): rewind() after it cut
  // the sequence to `position` (or before it does); while it runs tokens, their hidden states
  // go to hidden_sink() (Engine::HiddenCapture); then catch_up() with the ids the sequence
  // holds runs the module's rows whose next token they give. prefill() is these three.
  void rewind(int64_t position);
  std::vector<float>* hidden_sink() { return &pending_; }
  // The hidden states of n rows the owner ran on the sequence in a pass of its own (a serving
  // step's part, captured with Engine::capture_hidden), in order.
  void add_hidden(const float* rows, int64_t n);
  void catch_up(const TokenId* ids, int64_t n);
  // For a prompt cache (serve/prompt_cache.h): the module's own sequence, whose rows it saves
  // and loads beside the main sequence's; settled_rows() of them have their next token among
  // the main sequence's tokens (min(module position, P - 1)); after the owner loaded `position`
  // rows into both sequences, loaded(position) says so (nothing waits then; moex::Error unless
  // both sequences are at `position`).
  model::engine::Sequence& module_sequence() { return *mtp_seq_; }
  int64_t settled_rows() const;
  void loaded(int64_t position);
  // The main model's passes (EngineVerifier's: truncating, or rerunning the kept tokens on
  // recurrent states), their hidden states captured. on_step is left empty.
  SpecDriver driver();
  // At most k greedy drafts of the module (none when k < 1).
  std::vector<TokenId> propose(std::span<const TokenId> history, int64_t k) override;

  // Sees each first draft's logits (the module's row at `position`, after the main model's
  // real hidden state): `moex generate --dump-draft-logits`.
  std::function<void(int64_t position, const float* logits)> on_draft_logits;
  double verify_seconds() const { return verifier_.verify_seconds(); }
  int64_t reruns() const { return verifier_.reruns(); }  // passes whose kept tokens ran again
  double draft_seconds() const { return draft_s_; }
  double module_prefill_seconds() const { return prefill_s_; }  // in prefill()

 private:
  const float* verify(const TokenId* tokens, int64_t n);
  void keep(const TokenId* tokens, int64_t n, int64_t kept);

  model::engine::Engine& engine_;
  model::engine::Sequence& seq_;
  std::unique_ptr<model::engine::Sequence> mtp_seq_;
  std::vector<float> pending_;    // main hidden states of positions mtp_seq_->position()..P-1
  std::vector<float> own_;        // the module's output rows (propose)
  std::vector<float> last_;       // the module's last output row, the next draft's input
  EngineVerifier verifier_;       // the main model's passes
  double draft_s_ = 0, prefill_s_ = 0;
};

}  // namespace moex::generate
