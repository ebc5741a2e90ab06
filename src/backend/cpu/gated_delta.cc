// gated_delta_scalar (the reference) and gated_delta (fused state-row kernels, parallel rows).
#include "backend/cpu/gated_delta.h"

#include <algorithm>

#include "core/isa.h"
#include "kernels/recurrent_rows.h"
#include "backend/cpu/parallel_work.h"

namespace moex::ops {
namespace {
constexpr int64_t kGroup = 4;  // state rows per kernel call
}  // namespace

void gated_delta_scalar(const GatedDeltaArgs& a) {
  const int64_t Dk = a.k_dim, Dv = a.v_dim, group = a.v_heads / a.k_heads;
  for (int64_t t = 0; t < a.steps; ++t) {
    for (int64_t h = 0; h < a.v_heads; ++h) {
      const int64_t hk = h / group;
      const float* q = a.q + (t * a.k_heads + hk) * Dk;
      const float* k = a.k + (t * a.k_heads + hk) * Dk;
      const float* v = a.v + (t * a.v_heads + h) * Dv;
      const float g = a.g[t * a.v_heads + h], beta = a.beta[t * a.v_heads + h];
      float* y = a.out + (t * a.v_heads + h) * Dv;
      for (int64_t i = 0; i < Dv; ++i) {
        float* s = a.state + (h * Dv + i) * Dk;
        float kv = 0.f;
        for (int64_t j = 0; j < Dk; ++j) {
          s[j] *= g;
          kv += s[j] * k[j];
        }
        const float d = (v[i] - kv) * beta;
        float o = 0.f;
        for (int64_t j = 0; j < Dk; ++j) {
          s[j] += k[j] * d;
          o += s[j] * q[j];
        }
        y[i] = o;
      }
    }
  }
}

void gated_delta(const GatedDeltaArgs& a) {
  const kernels::RecurrentRowOps& row = kernels::recurrent_row_ops(active_isa());
  const int64_t Dk = a.k_dim, Dv = a.v_dim, group = a.v_heads / a.k_heads;
  const int64_t rows = a.v_heads * Dv;
  // Each state row runs every step on its own (the recurrence is sequential in t only); up to
  // kGroup rows of one head run together (the kernel's result per row is the same either way).
  parallel_for_work(rows, a.steps * Dk * 4, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi;) {
      const int64_t h = r / Dv, i = r % Dv, hk = h / group;
      const int64_t count = std::min({kGroup, hi - r, Dv - i});
      float* s = a.state + r * Dk;
      for (int64_t t = 0; t < a.steps; ++t) {
        const int64_t th = t * a.v_heads + h, tk = (t * a.k_heads + hk) * Dk;
        row.delta_rule(s, count, a.k + tk, a.q + tk, a.g[th], a.beta[th], a.v + th * Dv + i,
                       a.out + th * Dv + i, Dk);
      }
      r += count;
    }
  });
}

const char* gated_delta_name() {
  switch (active_isa()) {
    case Isa::kAvx512: return "gated_delta_f32__avx512";
    case Isa::kAvx2: return "gated_delta_f32__avx2";
    default: return "gated_delta_f32__scalar";
  }
}

}  // namespace moex::ops
