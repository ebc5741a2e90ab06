#include "model/engine/routing_tally.h"

#include <algorithm>
#include <cmath>

namespace moex::model::engine {

void RoutingTally::add(const float* logits, const int32_t* ids, int64_t n, int64_t k) {
  const int64_t e = int64_t(selected.size());
  for (int64_t t = 0; t < n; ++t) {
    const float* row = logits + t * e;
    const double top = *std::max_element(row, row + e);
    double z = 0, zx = 0;
    for (int64_t i = 0; i < e; ++i) {
      const double x = double(row[i]) - top;
      const double w = std::exp(x);
      z += w;
      zx += w * x;
    }
    // H = log z - E[x] under p = exp(x) / z.
    entropy_sum += std::log(z) - zx / z;
    for (int64_t j = 0; j < k; ++j) {
      const int32_t id = ids[t * k + j];
      if (id >= 0 && id < e) ++selected[size_t(id)];
    }
  }
  tokens += n;
}

int64_t RoutingTally::experts_reached() const {
  return std::count_if(selected.begin(), selected.end(), [](int64_t c) { return c > 0; });
}

double RoutingTally::selection_entropy() const {
  double total = 0;
  for (int64_t c : selected) total += double(c);
  double h = 0;
  for (int64_t c : selected)
    if (c > 0) h -= double(c) / total * std::log(double(c) / total);
  return h;
}

}  // namespace moex::model::engine
