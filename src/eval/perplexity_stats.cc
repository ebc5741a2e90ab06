#include "eval/perplexity_stats.h"

#include <cmath>

#include "harness/stats.h"

namespace moex::eval {
namespace {

// Mean and standard error of the mean (sample standard deviation / sqrt(n)).
void mean_stderr(const std::vector<double>& v, double* mean, double* err) {
  const double n = double(v.size());
  double s = 0, s2 = 0;
  for (double x : v) {
    s += x;
    s2 += x * x;
  }
  *mean = n > 0 ? s / n : 0;
  *err = n > 1 ? std::sqrt(std::max(0.0, (s2 / n - *mean * *mean)) / (n - 1)) : 0;
}

}  // namespace

void NllAccumulator::add(double nll) {
  ++n_;
  sum_ += nll;
  sum_sq_ += nll * nll;
}

Perplexity NllAccumulator::result() const {
  Perplexity p;
  p.tokens = n_;
  if (n_ == 0) return p;
  const double n = double(n_);
  p.mean_nll = sum_ / n;
  p.nll_stderr = n_ > 1 ? std::sqrt(std::max(0.0, sum_sq_ / n - p.mean_nll * p.mean_nll) / (n - 1))
                        : 0;
  p.ppl = std::exp(p.mean_nll);
  p.ppl_stderr = p.ppl * p.nll_stderr;
  return p;
}

Percentiles percentiles_of(std::vector<double> v) {
  Percentiles p;
  if (v.empty()) return p;
  using harness::percentile;
  p.max = percentile(v, 1.0);
  p.p99_9 = percentile(v, 0.999);
  p.p99 = percentile(v, 0.99);
  p.p95 = percentile(v, 0.95);
  p.p90 = percentile(v, 0.90);
  p.median = percentile(v, 0.5);
  p.p10 = percentile(v, 0.10);
  p.p5 = percentile(v, 0.05);
  p.p1 = percentile(v, 0.01);
  p.p0_1 = percentile(v, 0.001);
  p.min = percentile(v, 0.0);
  return p;
}

void KlAccumulator::add(const RowScore& q, const RowScore& base, double kld) {
  q_.add(q.nll);
  base_.add(base.nll);
  kld_.push_back(kld);
  dp_.push_back(q.p_target - base.p_target);
  ln_diff_.push_back(q.nll - base.nll);
  same_top_ += q.argmax == base.argmax;
}

KlComparison KlAccumulator::result() const {
  KlComparison r;
  r.q = q_.result();
  r.base = base_.result();
  mean_stderr(ln_diff_, &r.ln_ratio, &r.ln_ratio_stderr);
  r.ppl_ratio = std::exp(r.ln_ratio);
  r.ppl_ratio_stderr = r.ppl_ratio * r.ln_ratio_stderr;
  mean_stderr(kld_, &r.kld_mean, &r.kld_stderr);
  r.kld = percentiles_of(kld_);
  const double n = double(kld_.size());
  if (n > 0) {
    r.same_top = double(same_top_) / n;
    r.same_top_stderr = n > 1 ? std::sqrt(r.same_top * (1 - r.same_top) / (n - 1)) : 0;
  }
  std::vector<double> dp2(dp_.size());
  for (size_t i = 0; i < dp_.size(); ++i) dp2[i] = dp_[i] * dp_[i];
  double ms = 0, ms_err = 0;
  mean_stderr(dp2, &ms, &ms_err);
  r.rms_dp = std::sqrt(ms);
  r.rms_dp_stderr = r.rms_dp > 0 ? ms_err / (2 * r.rms_dp) : 0;
  r.dp = percentiles_of(dp_);
  return r;
}

}  // namespace moex::eval
