// Small statistics for benchmark reporting: median, min/max spread, percentiles, and a
// deterministic bootstrap of the ratio of two medians.
#pragma once

#include <cstdint>
#include <vector>

namespace moex::harness {

double median(std::vector<double> v);          // NaN for empty
double percentile(std::vector<double> v, double p);  // p in [0,1], linear interpolation
// (max - min) / median, the run-to-run spread quoted beside every median.
double relative_spread(const std::vector<double>& v);

struct Interval {
  double lo = 0, hi = 0;
};

// Resamples each arm's runs with replacement `reps` times (fixed seed: reproducible) and
// returns the replicates of median(num)/median(den).
std::vector<double> bootstrap_ratio_replicates(const std::vector<double>& num,
                                               const std::vector<double>& den, int reps,
                                               uint64_t seed);
Interval central_interval(const std::vector<double>& replicates, double coverage = 0.95);

}  // namespace moex::harness
