// Grouped-query attention over an f32 KV cache, for prefill (many query rows, causal mask)
// and decode (one row): out = softmax(scale * q k^T + causal) v, per head, query head h
// reading kv head h / (heads / kv_heads), as mx.fast.scaled_dot_product_attention.
#pragma once

#include "backend/op_args.h"

#include <cstddef>
#include <cstdint>

#include "backend/kv_cache.h"

namespace moex::ops {

// Row r at position p = pos0 + r attends to positions [0, p] (causal), or with chunk > 0 to
// [p - p % chunk, p] (its own chunk only, as mlx-lm's llama4 chunk mask), or with window > 0
// to [p - window + 1, p] (mlx-lm's window mask: the window includes the query's own key). Parallel over
// (kv head, block of up to 16 of its query heads, tile of up to 4 rows); a (row, head) pair's
// values do not depend on the blocking or the tiling, so prefill equals decode bit for bit.
void attention(const AttentionArgs& a);

}  // namespace moex::ops
