// Top-k expert selection that reproduces MLX's CPU argpartition bit for bit: an index array
// 0..E-1 partitioned by std::nth_element with MLX's comparator (value, then index; NaN last),
// which is what mx.argpartition runs on CPU. The returned order is argpartition's order.
#pragma once

#include <cstdint>

#include "moe/router.h"

namespace moex::moe {

// Writes the k selected indices of v[0..n) to out[0..k), in MLX's order:
//   kHigherIndexWins: mx.argpartition(v, kth=n-k)[n-k:]
//   kLowerIndexWins:  mx.argpartition(-v, kth=k-1)[:k]
// scratch_idx [n] and scratch_val [n] are caller-owned buffers. Requires 1 <= k <= n.
void mlx_topk(const float* v, int64_t n, int64_t k, TopKTies ties, uint32_t* scratch_idx,
              float* scratch_val, int32_t* out);

}  // namespace moex::moe
