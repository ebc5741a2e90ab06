// mla_attention_scalar (the reference) and mla_attention (vector primitives, parallel blocks).
#include "backend/cpu/mla_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/isa.h"
#include "kernels/vector_f32.h"
#include "backend/cpu/parallel_work.h"
#include "backend/cpu/softmax.h"

namespace moex::ops {

namespace {

void check(const MlaAttentionArgs& a) {
  const KvCache& c = *a.cache;
  if (c.dtype() != DType::F32)
    fail("mla_attention: the latent cache is f32 only, not ", dtype_name(c.dtype()));
  // Callers are engine code; shapes were validated at load, so a mismatch is a bug.
  if (c.kv_heads() != 1 || c.has_values() || a.latent_dim < 1 || a.latent_dim > c.head_dim() ||
      a.pos0 + a.rows > c.length())
    fail("mla_attention: the cache must be keys-only with one head wider than the latent (",
         a.latent_dim, ") and hold ", a.pos0 + a.rows, " positions; it has ", c.kv_heads(),
         " heads of ", c.head_dim(), ", ", c.length(), " positions");
}

// Heads per unit of work, at most: the cache rows are read once for this many heads (the
// vector ops take them in chunks that stay in L1 for all of a unit's heads).
constexpr int64_t kMlaHeadsPerUnit = 64;

}  // namespace

void mla_attention_scalar(const MlaAttentionArgs& a) {
  check(a);
  const KvCache& c = *a.cache;
  const int64_t dim = c.head_dim(), L = a.latent_dim;
  std::vector<float> s;
  for (int64_t r = 0; r < a.rows; ++r) {
    const int64_t n = a.pos0 + r + 1;
    s.assign(size_t(n), 0.f);
    for (int64_t h = 0; h < a.heads; ++h) {
      const float* q = a.q + (r * a.heads + h) * dim;
      float m = -INFINITY;
      for (int64_t t = 0; t < n; ++t) {
        const float* k = c.key(t, 0);
        float d = 0.f;
        for (int64_t i = 0; i < dim; ++i) d += q[i] * k[i];
        s[size_t(t)] = d * a.scale;
        m = std::max(m, s[size_t(t)]);
      }
      float sum = 0.f;
      for (int64_t t = 0; t < n; ++t) {
        s[size_t(t)] = std::exp(s[size_t(t)] - m);
        sum += s[size_t(t)];
      }
      float* o = a.out + (r * a.heads + h) * L;
      for (int64_t i = 0; i < L; ++i) o[i] = 0.f;
      for (int64_t t = 0; t < n; ++t) {
        const float p = s[size_t(t)] / sum;
        const float* k = c.key(t, 0);
        for (int64_t i = 0; i < L; ++i) o[i] += p * k[i];
      }
    }
  }
}

void mla_attention(const MlaAttentionArgs& a) {
  check(a);
  const KvCache& c = *a.cache;
  const int64_t dim = c.head_dim(), L = a.latent_dim;
  // As many heads per unit as leave a unit for every thread (decode: one row, so DeepSeek-V3's
  // 128 heads make one block per thread rather than 16 blocks that each read the whole cache).
  const int64_t per_unit = block_size_for_threads(a.heads, kMlaHeadsPerUnit, a.rows);
  const int64_t blocks = (a.heads + per_unit - 1) / per_unit;
  const int64_t max_keys = a.pos0 + a.rows;
  const kernels::VectorF32Ops& vec = kernels::vector_f32_ops(active_isa());
  // Units: (block of heads, row), the rows handed out first-last-second-... (zigzag_slot).
  // Each (row, head) pair: its scores over the cache rows, their softmax, and the sum of the
  // rows' latent parts (the values: the first L of each dim-wide row) weighted by them.
  parallel_for_work(a.rows * blocks, per_unit * max_keys * (dim + L), [&](int64_t lo, int64_t hi) {
    std::vector<float> scores(size_t(per_unit * max_keys));
    for (int64_t u = lo; u < hi; ++u) {
      const int64_t r = zigzag_slot(u % a.rows, a.rows), h0 = (u / a.rows) * per_unit;
      const int64_t nh = std::min(per_unit, a.heads - h0), n = a.pos0 + r + 1;
      vec.scaled_dots(a.q + (r * a.heads + h0) * dim, nh, c.key(0, 0), n, dim, a.scale,
                      scores.data(), max_keys);
      for (int64_t j = 0; j < nh; ++j) softmax(vec, scores.data() + j * max_keys, n, nullptr);
      vec.weighted_sums(scores.data(), nh, max_keys, c.key(0, 0), dim, n, L,
                        a.out + (r * a.heads + h0) * L);
    }
  });
}

const char* mla_attention_name() {
  switch (active_isa()) {
    case Isa::kAvx512: return "mla_attention_f32__avx512";
    case Isa::kAvx2: return "mla_attention_f32__avx2";
    default: return "mla_attention_f32__scalar";
  }
}

}  // namespace moex::ops
