// Helpers shared by the ops tests: deterministic random data and error norms.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace moex::ops::optest {

inline std::vector<float> random_vec(int64_t n, uint64_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(g);
  return v;
}

inline double l2(const float* a, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(a[i]) * a[i];
  return std::sqrt(s);
}

inline double max_abs_diff(const float* a, const double* b, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

// Single-precision epsilon: the unit of the tolerances below.
inline constexpr double kEps = 1.1920929e-7;

}  // namespace moex::ops::optest
