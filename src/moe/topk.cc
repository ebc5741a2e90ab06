// MLX-compatible top-k selection (see topk.h).
#include "moe/topk.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace moex::moe {
namespace {

// mx.argpartition on CPU: std::nth_element over iota indices with this comparator.
void mlx_argpartition(const float* data, int64_t n, int64_t kth, uint32_t* idx) {
  std::iota(idx, idx + n, uint32_t{0});
  std::nth_element(idx, idx + kth, idx + n, [data](uint32_t a, uint32_t b) {
    const float v1 = data[a], v2 = data[b];
    if (std::isnan(v1)) return false;
    if (std::isnan(v2)) return true;
    return v1 < v2 || (v1 == v2 && a < b);
  });
}

}  // namespace

void mlx_topk(const float* v, int64_t n, int64_t k, TopKTies ties, uint32_t* scratch_idx,
              float* scratch_val, int32_t* out) {
  if (ties == TopKTies::kHigherIndexWins) {
    mlx_argpartition(v, n, n - k, scratch_idx);
    for (int64_t i = 0; i < k; ++i) out[i] = int32_t(scratch_idx[n - k + i]);
  } else {
    for (int64_t i = 0; i < n; ++i) scratch_val[i] = -v[i];
    mlx_argpartition(scratch_val, n, k - 1, scratch_idx);
    for (int64_t i = 0; i < k; ++i) out[i] = int32_t(scratch_idx[i]);
  }
}

}  // namespace moex::moe
