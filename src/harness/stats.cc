// Median, percentiles, spread, bootstrap.
#include "harness/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace moex::harness {

double median(std::vector<double> v) { return percentile(std::move(v), 0.5); }

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  double pos = p * double(v.size() - 1);
  size_t i = size_t(std::floor(pos));
  if (i + 1 >= v.size()) return v.back();
  double f = pos - double(i);
  return v[i] + f * (v[i + 1] - v[i]);
}

double relative_spread(const std::vector<double>& v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return (*hi - *lo) / median(v);
}

namespace {
uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
std::vector<double> resample(const std::vector<double>& v, uint64_t& s) {
  std::vector<double> r(v.size());
  for (auto& x : r) x = v[splitmix64(s) % v.size()];
  return r;
}
}  // namespace

std::vector<double> bootstrap_ratio_replicates(const std::vector<double>& num,
                                               const std::vector<double>& den, int reps,
                                               uint64_t seed) {
  std::vector<double> out;
  if (num.empty() || den.empty()) return out;
  uint64_t s = seed;
  out.reserve(size_t(reps));
  for (int i = 0; i < reps; ++i) out.push_back(median(resample(num, s)) / median(resample(den, s)));
  return out;
}

Interval central_interval(const std::vector<double>& replicates, double coverage) {
  double a = (1.0 - coverage) / 2.0;
  return {percentile(replicates, a), percentile(replicates, 1.0 - a)};
}

}  // namespace moex::harness
