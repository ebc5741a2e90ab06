// Forced drafts, the measuring stick of speculative decoding: a known continuation (plain
// greedy decoding's own output) proposed with each token kept right with probability `a` and
// otherwise replaced, so that a run's acceptance is set from outside (a = 1: every draft is
// accepted). bench-spec checks the speed model against runs with these drafts.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "generate/ngram_draft.h"

namespace moex::generate {

class ForcedDrafter final : public Drafter {
 public:
  // `script`: the output the model will give after a prompt of `prompt_tokens`; a wrong draft
  // is the next id (mod vocab), never the scripted one. a in [0, 1].
  ForcedDrafter(std::vector<TokenId> script, int64_t prompt_tokens, double a, int64_t vocab,
                uint64_t seed = 12345);
  // The script from the output position `history` ends at, at most k tokens, each right with
  // probability a (a fresh draw per proposal).
  std::vector<TokenId> propose(std::span<const TokenId> history, int64_t k) override;

 private:
  std::vector<TokenId> script_;
  int64_t prompt_, vocab_;
  double a_;
  std::mt19937_64 rng_;
};

// Tokens per pass when each of k drafts is right with probability a, independently, and a
// pass outputs its accepted drafts plus one token: 1 + a + ... + a^k = (1 - a^(k+1)) / (1 - a).
double expected_tokens_per_pass(double a, int64_t k);

}  // namespace moex::generate
