// Draft tokens for speculative decoding without a draft model (prompt lookup, as vLLM's
// `ngram` method and llama.cpp's n-gram speculation): the last n tokens of the prompt and
// output so far are looked up earlier in that history, and the tokens that followed their
// latest earlier occurrence are the draft.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "generate/logits_processors.h"

namespace moex::generate {

// Where drafts come from: `propose` returns at most k tokens that may follow `history` (the
// prompt and every output token so far); none when it has no guess.
class Drafter {
 public:
  virtual ~Drafter() = default;
  virtual std::vector<TokenId> propose(std::span<const TokenId> history, int64_t k) = 0;
};

struct NgramArgs {
  int64_t min_n = 2;  // the shortest suffix looked up
  int64_t max_n = 4;  // the longest (tried first)
};
inline constexpr int64_t kMaxNgram = 64;

// Throws moex::Error naming the bound ("--spec-ngram-min", "--spec-ngram-max") unless
// 1 <= min_n <= max_n <= kMaxNgram.
void validate_ngram_args(const NgramArgs& args);

// For n from max_n down to min_n: the latest start j < size - n with history[j, j + n) equal
// to the last n tokens; the draft is what followed it, history[j + n, j + n + k) cut at the
// end of the history. The first n that matches wins. The scan is linear in the history.
class NgramDrafter final : public Drafter {
 public:
  explicit NgramDrafter(NgramArgs args);
  std::vector<TokenId> propose(std::span<const TokenId> history, int64_t k) override;

 private:
  NgramArgs args_;
};

}  // namespace moex::generate
