// ForcedDrafter and expected_tokens_per_pass (see forced_draft.h).
#include "generate/forced_draft.h"

#include <cmath>
#include <utility>

#include "core/error.h"

namespace moex::generate {

ForcedDrafter::ForcedDrafter(std::vector<TokenId> script, int64_t prompt_tokens, double a,
                             int64_t vocab, uint64_t seed)
    : script_(std::move(script)), prompt_(prompt_tokens), vocab_(vocab), a_(a), rng_(seed) {
  if (!(a >= 0 && a <= 1)) fail("forced drafts: acceptance ", a, " outside [0, 1]");
  if (vocab < 2) fail("forced drafts: a wrong draft needs a vocabulary of 2 or more");
}

std::vector<TokenId> ForcedDrafter::propose(std::span<const TokenId> h, int64_t k) {
  std::vector<TokenId> out;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int64_t i = int64_t(h.size()) - prompt_;
       i >= 0 && i < int64_t(script_.size()) && int64_t(out.size()) < k; ++i) {
    const TokenId right = script_[size_t(i)];
    out.push_back(u(rng_) < a_ ? right : TokenId((right + 1) % vocab_));
  }
  return out;
}

double expected_tokens_per_pass(double a, int64_t k) {
  if (a == 1.0) return double(k + 1);
  return (1.0 - std::pow(a, double(k + 1))) / (1.0 - a);
}

}  // namespace moex::generate
