// What one row of a model's logits says about the next token: its negative log-likelihood,
// the probability of the token that came, the most likely token, and (for the KL divergence
// against a base run) the row's log-probabilities. Computed in double from the f32 logits, so
// that two rows that are equal give a divergence of exactly 0 and tiny differences (1e-9
// nats between precision tiers) are not lost to rounding.
#pragma once

#include <cstdint>
#include <vector>

namespace moex::eval {

struct RowScore {
  double nll = 0;       // -log p(target)
  double p_target = 0;  // p(target)
  int32_t argmax = 0;   // the most likely token (the lowest id among ties)
};

// Scores `logits` [vocab] against `target`; fills logp [vocab] with the row's log-softmax
// when it is not null. moex::Error for a target outside the vocabulary or a non-finite logit
// (naming the position given in `where`).
RowScore score_row(const float* logits, int64_t vocab, int32_t target, double* logp,
                   const char* where = "logits row");

// KL(base || q) = sum_i p_base(i) * (log p_base(i) - log p_q(i)), from two log-softmax rows.
double kl_divergence(const double* base_logp, const double* q_logp, int64_t vocab);

}  // namespace moex::eval
