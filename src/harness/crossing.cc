// Linear-interpolation crossover of a ratio curve (see crossing.h).
#include "harness/crossing.h"

namespace moex::harness {

std::optional<double> first_ratio_crossing(const std::vector<RatioPoint>& pts, size_t* at) {
  for (size_t i = 0; i + 1 < pts.size(); ++i) {
    const RatioPoint &a = pts[i], &b = pts[i + 1];
    if (a.ratio >= 1.0 && b.ratio < 1.0) {
      if (at) *at = i;
      return a.dff + (a.ratio - 1.0) * (b.dff - a.dff) / (a.ratio - b.ratio);
    }
  }
  return std::nullopt;
}

}  // namespace moex::harness
