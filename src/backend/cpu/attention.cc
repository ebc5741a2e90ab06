// GQA attention: one (kv head, block of its query heads, tile of rows) is one unit of work;
// over an f32 or f16 cache (f16 rows read back as f32 exactly), scores in f32 (SIMD dot
// products of the active instruction set, kernels/vector_f32.h), max-subtracted softmax (its
// e^x the instruction set's too), weighted sum of values.
#include "backend/cpu/attention.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/isa.h"
#include "kernels/vector_f32.h"
#include "backend/cpu/parallel_work.h"
#include "backend/cpu/softmax.h"

namespace moex::ops {

namespace {

// Query heads per unit of work: the heads of one group that share a kv head are computed
// together, so each key and value row is read once for up to kHeadsPerUnit heads (the vector
// ops take the keys in chunks that stay in L1 for all of them).
constexpr int64_t kHeadsPerUnit = 16;
// Query rows per unit: a tile of rows shares every key and value row it reads too. With one
// row per unit, a 512-token prefill read each kv head's keys and values (256 KB each at
// Qwen3's shape) once per row, and the units of all kv heads in turn did not fit in L2.
constexpr int64_t kRowsPerTile = 4;

// The keys row r sees: [first, last].
struct KeyRange {
  int64_t first, last;
};
KeyRange key_range(const AttentionArgs& a, int64_t r) {
  const int64_t pos = a.pos0 + r;
  int64_t first = a.chunk > 0 ? pos - pos % a.chunk : 0;
  if (a.window > 0) first = std::max(first, pos - a.window + 1);
  return {first, pos};
}

// Rows [r0, r1) x query heads [h0, h1), all heads in the group of one kv head, one row after
// another. Each (row, head) pair does what one row alone would: its scores q.k * scale over its
// keys in a row of `scores` ([h1 - h0] rows, stride floats apart), the softmax of that row, then its output as the sum of
// value rows weighted by the scores, accumulated in key order from zero (the vector ops'
// scaled_dots and weighted_sums over the row's heads). The rows of a tile read the same keys
// and values while they are in cache, and the result does not depend on the tile.
void attend_tile(const AttentionArgs& a, const kernels::VectorF32Ops& vec, int64_t r0,
                 int64_t r1, int64_t h0, int64_t h1, float* scores, int64_t stride) {
  const KvCache& c = *a.cache;
  const int64_t hd = c.head_dim();
  const int64_t kvh = h0 / (a.heads / c.kv_heads());
  const int64_t nh = h1 - h0;
  const bool half = c.dtype() == DType::F16;
  for (int64_t r = r0; r < r1; ++r) {
    const KeyRange kr = key_range(a, r);
    const int64_t n = kr.last + 1 - kr.first;
    float* s = scores;
    const float* q = a.q + (r * a.heads + h0) * hd;
    float* out = a.out + (r * a.heads + h0) * hd;
    if (half)
      vec.scaled_dots_f16(q, nh, c.key_f16(kr.first, kvh), n, hd, a.scale, s, stride);
    else
      vec.scaled_dots(q, nh, c.key(kr.first, kvh), n, hd, a.scale, s, stride);
    for (int64_t j = 0; j < nh; ++j)
      softmax(vec, s + j * stride, n, a.sinks ? a.sinks + h0 + j : nullptr);
    if (half)
      vec.weighted_sums_f16(s, nh, stride, c.value_f16(kr.first, kvh), n, hd, out);
    else
      vec.weighted_sums(s, nh, stride, c.value(kr.first, kvh), hd, n, hd, out);
  }
}

}  // namespace

void attention(const AttentionArgs& a) {
  const KvCache& c = *a.cache;
  // Callers are engine code; shapes were validated at load, so a mismatch is a bug.
  if (a.heads % c.kv_heads() != 0 || a.pos0 + a.rows > c.length())
    fail("attention: ", a.heads, " heads over ", c.kv_heads(), " kv heads, rows up to ",
         a.pos0 + a.rows, " but the cache holds ", c.length());
  // Units: (kv head, block of its query heads, tile of up to kRowsPerTile rows), the tiles of
  // one head block consecutive so that a thread's units reuse one kv head's keys and values.
  // A unit takes as many heads of a group as it can while there are units enough for every
  // thread (decode has one tile: a kv head's heads are split only when the threads outnumber
  // the kv heads). The blocking changes no result.
  const int64_t group = a.heads / c.kv_heads();
  const int64_t tiles = (a.rows + kRowsPerTile - 1) / kRowsPerTile;
  const int64_t per_unit = block_size_for_threads(group, kHeadsPerUnit, c.kv_heads() * tiles);
  const int64_t blocks = (group + per_unit - 1) / per_unit;
  const int64_t units = c.kv_heads() * blocks * tiles;
  const int64_t max_keys = a.pos0 + a.rows;
  const int64_t tile_rows = std::min(a.rows, kRowsPerTile);
  const kernels::VectorF32Ops& vec = kernels::vector_f32_ops(active_isa());
  const int64_t work = tile_rows * per_unit * max_keys * c.head_dim() * 2;
  parallel_for_work(units, work, [&](int64_t lo, int64_t hi) {
    std::vector<float> scores(static_cast<size_t>(per_unit * max_keys));
    for (int64_t u = lo; u < hi; ++u) {
      const int64_t head_block = u / tiles, tile = zigzag_slot(u % tiles, tiles);
      const int64_t kvh = head_block / blocks, b = head_block % blocks;
      const int64_t h0 = kvh * group + b * per_unit;
      const int64_t h1 = std::min(h0 + per_unit, (kvh + 1) * group);
      const int64_t r0 = tile * kRowsPerTile, r1 = std::min(r0 + kRowsPerTile, a.rows);
      attend_tile(a, vec, r0, r1, h0, h1, scores.data(), max_keys);
    }
  });
}

}  // namespace moex::ops
