// Sampling filters and the categorical draw, in the order mlx-lm applies them.
#include "backend/cpu/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "backend/cpu/softmax.h"

namespace moex::ops {

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
}

Sampler::Sampler(const SamplerArgs& args) : args_(args), rng_(args.seed) {
  if (!std::isfinite(args.temperature) || args.temperature < 0.0)
    fail("--temp must be a finite number >= 0, got ", args.temperature);
  if (args.top_k < 0) fail("--top-k must be >= 0, got ", args.top_k);
  if (!(args.top_p >= 0.0 && args.top_p <= 1.0))
    fail("--top-p must be in [0, 1], got ", args.top_p);
  if (!(args.min_p >= 0.0 && args.min_p <= 1.0))
    fail("--min-p must be in [0, 1], got ", args.min_p);
}

double Sampler::uniform01() { return double(rng_() >> 11) * 0x1.0p-53; }

void Sampler::apply_top_p(float* lp, int64_t n, double top_p, std::vector<float>& scratch) {
  // mlx-lm: sort ascending; mass_above[i] = sum of probabilities strictly after i; drop the
  // prefix whose mass_above >= top_p * total; the threshold is the first kept logprob.
  scratch.assign(lp, lp + n);
  std::sort(scratch.begin(), scratch.end());
  std::vector<double> above(static_cast<size_t>(n));  // exclusive reverse cumulative sum
  double acc = 0.0;
  for (int64_t i = n - 1; i >= 0; --i) {
    above[size_t(i)] = acc;
    acc += std::exp(double(scratch[size_t(i)]));
  }
  const double total = acc;
  int64_t dropped = 0;
  while (dropped < n && above[size_t(dropped)] >= top_p * total) ++dropped;
  if (dropped >= n) dropped = n - 1;
  const float threshold = scratch[size_t(dropped)];
  for (int64_t i = 0; i < n; ++i)
    if (lp[i] < threshold) lp[i] = kNegInf;
}

void Sampler::apply_min_p(float* lp, int64_t n, double min_p) {
  float m = kNegInf;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, lp[i]);
  const float cut = float(double(m) + std::log(min_p));
  for (int64_t i = 0; i < n; ++i)
    if (lp[i] < cut) lp[i] = kNegInf;
}

void Sampler::apply_top_k(float* lp, int64_t n, int64_t k, std::vector<float>& scratch) {
  if (k <= 0 || k >= n) return;
  scratch.assign(lp, lp + n);
  std::nth_element(scratch.begin(), scratch.begin() + (k - 1), scratch.end(), std::greater<float>());
  const float kth = scratch[size_t(k - 1)];
  // Keep everything above the k-th value, then ties at it in index order until k are kept.
  int64_t above = 0;
  for (int64_t i = 0; i < n; ++i) above += lp[i] > kth;
  int64_t ties_left = k - above;
  for (int64_t i = 0; i < n; ++i) {
    if (lp[i] > kth) continue;
    if (lp[i] == kth && ties_left > 0) {
      --ties_left;
      continue;
    }
    lp[i] = kNegInf;
  }
}

int64_t Sampler::sample(const float* logits, int64_t n) {
  // NaN or +inf logits come from corrupt weights or a broken kernel: there is no token to
  // pick, and argmax would silently return id 0 (-inf is a legitimate mask).
  for (int64_t i = 0; i < n; ++i)
    if (std::isnan(logits[i]) || logits[i] == std::numeric_limits<float>::infinity())
      fail("the model produced a ", std::isnan(logits[i]) ? "NaN" : "+inf", " logit (token id ", i,
           " of ", n, "); the weights are likely corrupt or the checkpoint misread");
  if (greedy()) return argmax(logits, n);
  lp_.assign(logits, logits + n);
  log_softmax(lp_.data(), n);
  float* lp = lp_.data();
  if (args_.top_p > 0.0 && args_.top_p < 1.0) apply_top_p(lp, n, args_.top_p, scratch_);
  if (args_.min_p != 0.0) apply_min_p(lp, n, args_.min_p);
  if (args_.top_k > 0) apply_top_k(lp, n, args_.top_k, scratch_);
  // Categorical over softmax(lp / T), accumulated in double.
  const double inv_t = 1.0 / args_.temperature;
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) m = std::max(m, double(lp[i]) * inv_t);
  if (!std::isfinite(m)) return argmax(logits, n);
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) total += std::exp(double(lp[i]) * inv_t - m);
  const double target = uniform01() * total;
  double acc = 0.0;
  int64_t last = -1;
  for (int64_t i = 0; i < n; ++i) {
    const double p = std::exp(double(lp[i]) * inv_t - m);
    if (p <= 0.0) continue;
    acc += p;
    last = i;
    if (target < acc) return i;
  }
  return last >= 0 ? last : argmax(logits, n);
}

}  // namespace moex::ops
