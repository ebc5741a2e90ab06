// ssm_scan_scalar (the reference) and ssm_scan (fused state-row kernels, parallel rows).
#include "model/ops/ssm_scan.h"

#include <cmath>

#include "core/isa.h"
#include "kernels/recurrent_rows.h"
#include "model/ops/parallel_work.h"

namespace moex::model::ops {

void ssm_scan_scalar(const SsmScanArgs& a) {
  const int64_t H = a.heads, Dh = a.head_dim, N = a.state_dim, per_group = a.heads / a.groups;
  for (int64_t t = 0; t < a.steps; ++t) {
    for (int64_t h = 0; h < H; ++h) {
      const float dt = a.dt[t * H + h];
      const float decay = std::exp(dt * a.a[h]);
      const float* B = a.b + (t * a.groups + h / per_group) * N;
      const float* C = a.c + (t * a.groups + h / per_group) * N;
      const float* x = a.x + (t * H + h) * Dh;
      float* y = a.out + (t * H + h) * Dh;
      for (int64_t i = 0; i < Dh; ++i) {
        float* s = a.state + (h * Dh + i) * N;
        const float dtx = dt * x[i];
        float acc = 0.f;
        for (int64_t n = 0; n < N; ++n) {
          s[n] = decay * s[n] + dtx * B[n];
          acc += s[n] * C[n];
        }
        y[i] = acc + a.d[h] * x[i];
      }
    }
  }
}

void ssm_scan(const SsmScanArgs& a) {
  const kernels::RecurrentRowOps& row = kernels::recurrent_row_ops(active_isa());
  const int64_t H = a.heads, Dh = a.head_dim, N = a.state_dim, per_group = a.heads / a.groups;
  // Each state row runs every step on its own (the recurrence is sequential in t only).
  parallel_for_work(H * Dh, a.steps * N * 3, [&](int64_t lo, int64_t hi) {
    int64_t decay_of = -1;  // the (step, head) whose exp(dt A) `decay` holds: one exp per row
    float decay = 0.f;      // run, not per row, when rows of a head follow each other (decode)
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t h = r / Dh, i = r % Dh;
      float* s = a.state + r * N;
      for (int64_t t = 0; t < a.steps; ++t) {
        const float dt = a.dt[t * H + h];
        if (t * H + h != decay_of) {
          decay = std::exp(dt * a.a[h]);
          decay_of = t * H + h;
        }
        const float x = a.x[(t * H + h) * Dh + i];
        const int64_t g = (t * a.groups + h / per_group) * N;
        a.out[(t * H + h) * Dh + i] = row.ssm(s, a.b + g, a.c + g, decay, dt * x, N) + a.d[h] * x;
      }
    }
  });
}

const char* ssm_scan_name() {
  switch (active_isa()) {
    case Isa::kAvx512: return "ssm_scan_f32__avx512";
    case Isa::kAvx2: return "ssm_scan_f32__avx2";
    default: return "ssm_scan_f32__scalar";
  }
}

}  // namespace moex::model::ops
