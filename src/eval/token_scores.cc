#include "eval/token_scores.h"

#include <cmath>

#include "core/error.h"

namespace moex::eval {

RowScore score_row(const float* logits, int64_t vocab, int32_t target, double* logp,
                   const char* where) {
  if (target < 0 || target >= vocab)
    fail(where, ": target token ", target, " is outside the vocabulary of ", vocab);
  double top = -INFINITY;
  int32_t arg = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    const double v = logits[i];
    if (!std::isfinite(v)) fail(where, ": logit ", i, " is not finite (", v, ")");
    if (v > top) {
      top = v;
      arg = int32_t(i);
    }
  }
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(double(logits[i]) - top);
  const double log_z = top + std::log(sum);
  if (logp)
    for (int64_t i = 0; i < vocab; ++i) logp[i] = double(logits[i]) - log_z;
  RowScore s;
  s.nll = log_z - double(logits[target]);
  s.p_target = std::exp(-s.nll);
  s.argmax = arg;
  return s;
}

double kl_divergence(const double* base_logp, const double* q_logp, int64_t vocab) {
  double kl = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    const double d = base_logp[i] - q_logp[i];
    if (d != 0) kl += std::exp(base_logp[i]) * d;
  }
  return kl;
}

}  // namespace moex::eval
