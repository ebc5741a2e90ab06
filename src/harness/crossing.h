// The crossover of a fused/fallback speed-ratio curve over Dff (ratio > 1: fused faster):
// where the ratio first falls from >= 1 to < 1, by linear interpolation between the two
// neighbouring points (the prior system's method). Shared by the sweep summary and `moex tune`.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace moex::harness {

struct RatioPoint {
  double dff = 0, ratio = 0;
};

// `pts` sorted by increasing Dff. Returns the interpolated Dff of the first >= 1 -> < 1 step
// (and, if `at` is non-null, the index of the point just below it), or nullopt if none.
std::optional<double> first_ratio_crossing(const std::vector<RatioPoint>& pts,
                                           size_t* at = nullptr);

}  // namespace moex::harness
