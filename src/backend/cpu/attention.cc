// GQA attention: one (row, kv head, block of its query heads) is one unit of work; scores in f32 (SIMD dot products of
// the active instruction set, kernels/vector_f32.h), max-subtracted softmax, weighted sum of
// values.
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
// together, so each key and value row is read once for up to kHeadsPerUnit heads (one head per
// unit read the whole cache once per head: L2-bound at Qwen3's 8 heads per kv head).
constexpr int64_t kHeadsPerUnit = 4;

// Query heads [h0, h1) of row r, all in the group of one kv head. scores: [h1 - h0][keys].
void attend_heads(const AttentionArgs& a, const kernels::VectorF32Ops& vec, int64_t r, int64_t h0,
                  int64_t h1, float* scores, int64_t stride) {
  const KvCache& c = *a.cache;
  const int64_t hd = c.head_dim();
  const int64_t kvh = h0 / (a.heads / c.kv_heads());
  const int64_t pos = a.pos0 + r;
  int64_t first = a.chunk > 0 ? pos - pos % a.chunk : 0;  // keys first..pos
  if (a.window > 0) first = std::max(first, pos - a.window + 1);
  const int64_t n = pos + 1 - first, nh = h1 - h0;
  const float* q = a.q + (r * a.heads + h0) * hd;
  float* o = a.out + (r * a.heads + h0) * hd;
  for (int64_t t = 0; t < n; ++t) {
    const float* k = c.key(first + t, kvh);
    for (int64_t j = 0; j < nh; ++j) scores[j * stride + t] = vec.dot(q + j * hd, k, hd) * a.scale;
  }
  for (int64_t j = 0; j < nh; ++j) {
    if (a.sinks)
      softmax_with_sink(scores + j * stride, n, a.sinks[h0 + j]);
    else
      softmax(scores + j * stride, n);
  }
  for (int64_t i = 0; i < nh * hd; ++i) o[i] = 0.f;
  for (int64_t t = 0; t < n; ++t) {
    const float* v = c.value(first + t, kvh);
    for (int64_t j = 0; j < nh; ++j) vec.axpy(scores[j * stride + t], v, o + j * hd, hd);
  }
}

}  // namespace

void attention(const AttentionArgs& a) {
  const KvCache& c = *a.cache;
  // Callers are engine code; shapes were validated at load, so a mismatch is a bug.
  if (a.heads % c.kv_heads() != 0 || a.pos0 + a.rows > c.length())
    fail("attention: ", a.heads, " heads over ", c.kv_heads(), " kv heads, rows up to ",
         a.pos0 + a.rows, " but the cache holds ", c.length());
  // Units: (row, kv head, block of up to kHeadsPerUnit of its query heads).
  const int64_t group = a.heads / c.kv_heads();
  const int64_t per_unit = group < kHeadsPerUnit ? group : kHeadsPerUnit;
  const int64_t blocks = (group + per_unit - 1) / per_unit;
  const int64_t units = a.rows * c.kv_heads() * blocks;
  const int64_t max_keys = a.pos0 + a.rows;
  const kernels::VectorF32Ops& vec = kernels::vector_f32_ops(active_isa());
  parallel_for_work(units, per_unit * max_keys * c.head_dim() * 2, [&](int64_t lo, int64_t hi) {
    std::vector<float> scores(static_cast<size_t>(per_unit * max_keys));
    for (int64_t u = lo; u < hi; ++u) {
      const int64_t r = u / (c.kv_heads() * blocks), rest = u % (c.kv_heads() * blocks);
      const int64_t h0 = (rest / blocks) * group + (rest % blocks) * per_unit;
      const int64_t h1 = std::min(h0 + per_unit, (rest / blocks + 1) * group);
      attend_heads(a, vec, r, h0, h1, scores.data(), max_keys);
    }
  });
}

}  // namespace moex::ops
