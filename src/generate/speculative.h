// Speculative decoding with a deterministic draft (prompt lookup): each step runs the last
// output token and up to k draft tokens through the model in one pass and keeps the drafts
// the generator would have output itself. The generator steps through the pass's rows in
// order exactly as plain decoding steps through its decode calls, so its processors (penalty
// counts, a grammar matcher) only ever see output tokens, and with the same seed the output
// is the plain loop's, token for token, at any temperature (docs/speculative.md says why
// this is the standard rejection rule for a point-mass draft).
#pragma once

#include <cstdint>
#include <functional>

#include "generate/generator.h"
#include "generate/ngram_draft.h"

namespace moex::generate {

inline constexpr int64_t kMaxDraftTokens = 64;

struct SpecDriver {
  // Runs tokens[0..n) at the sequence's position and returns the logits of every one,
  // [n][vocab], valid until the next call.
  std::function<const float*(const TokenId* tokens, int64_t n)> verify;
  // After verify(tokens, n): the sequence keeps only the first `kept` (1..n) of those tokens.
  std::function<void(const TokenId* tokens, int64_t n, int64_t kept)> keep;
  // Positions the sequence has left in its context.
  std::function<int64_t()> room;
  // As SequenceDriver::on_step: sees every step with the model's logits of that step; false
  // stops generation after this token.
  std::function<bool(const Step& step, const float* model_logits)> on_step;
};

struct SpecStats {
  int64_t passes = 0;    // verify() calls
  int64_t drafted = 0;   // draft tokens run
  int64_t accepted = 0;  // draft tokens kept (output as drafted)
  int64_t tokens = 0;    // output tokens after the first (the prompt's), the stop id included
  double acceptance() const { return drafted ? double(accepted) / double(drafted) : 0.0; }
  double tokens_per_pass() const { return passes ? double(tokens) / double(passes) : 0.0; }
};

struct SpecResult {
  RunEnd end = RunEnd::kLength;
  SpecStats stats;
};

// As run_sequence: steps `gen` from `logits` (the prompt's last) until it ends, the context
// fills or on_step says stop, drafting up to `draft` tokens per pass from `drafter` over
// `history` (the prompt's ids; the output is appended as it comes). moex::Error for draft
// outside 1..kMaxDraftTokens; errors of the driver and Generator::next propagate.
SpecResult run_speculative(Generator& gen, const float* logits, std::vector<TokenId> history,
                           Drafter& drafter, int64_t draft, int64_t vocab,
                           const SpecDriver& driver);

}  // namespace moex::generate
