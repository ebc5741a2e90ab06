// The figures llama-perplexity prints, accumulated position by position: perplexity with its
// standard error, and against a base run's logits the KL divergence (mean, standard error,
// percentiles), how often the most likely token is the same ("same top p"), the change in
// the probability of the token that came (delta p, RMS and percentiles) and the ratio of the
// two perplexities.
#pragma once

#include <cstdint>
#include <vector>

#include "eval/token_scores.h"

namespace moex::eval {

struct Perplexity {
  int64_t tokens = 0;
  double mean_nll = 0, nll_stderr = 0;  // nats per token
  double ppl = 0, ppl_stderr = 0;       // exp(mean_nll); stderr by the delta method
};

// Running sums of -log p over scored positions.
class NllAccumulator {
 public:
  void add(double nll);
  Perplexity result() const;

 private:
  int64_t n_ = 0;
  double sum_ = 0, sum_sq_ = 0;
};

// Distribution of a per-position figure, as llama.cpp lists it.
struct Percentiles {
  double max = 0, p99_9 = 0, p99 = 0, p95 = 0, p90 = 0, median = 0, p10 = 0, p5 = 0, p1 = 0,
         p0_1 = 0, min = 0;
};
Percentiles percentiles_of(std::vector<double> values);

struct KlComparison {
  Perplexity q, base;
  double ln_ratio = 0, ln_ratio_stderr = 0;  // mean of nll_q - nll_base = ln(PPL(Q)/PPL(base))
  double ppl_ratio = 0, ppl_ratio_stderr = 0;
  double kld_mean = 0, kld_stderr = 0;
  Percentiles kld;
  double same_top = 0, same_top_stderr = 0;  // fraction of positions with the same argmax
  double rms_dp = 0, rms_dp_stderr = 0;      // delta p = p_q(target) - p_base(target)
  Percentiles dp;
};

class KlAccumulator {
 public:
  // One scored position: the quantized run's and the base run's scores of the same target,
  // and KL(base || q) of their rows.
  void add(const RowScore& q, const RowScore& base, double kld);
  KlComparison result() const;
  int64_t positions() const { return int64_t(kld_.size()); }

 private:
  NllAccumulator q_, base_;
  std::vector<double> kld_, dp_, ln_diff_;
  int64_t same_top_ = 0;
};

}  // namespace moex::eval
