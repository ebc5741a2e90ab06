// ssm_scan_scalar (the reference) and ssm_scan (fused state-row kernels, parallel rows).
#include "backend/cpu/ssm_scan.h"

#include <algorithm>
#include <cmath>

#include "core/isa.h"
#include "kernels/recurrent_rows.h"
#include "backend/cpu/parallel_work.h"

namespace moex::ops {
namespace {
constexpr int64_t kGroup = 4;  // state rows per kernel call
}  // namespace

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
  // Each state row runs every step on its own (the recurrence is sequential in t only); up to
  // kGroup rows of one head run together (the kernel's result per row is the same either way).
  parallel_for_work(H * Dh, a.steps * N * 3, [&](int64_t lo, int64_t hi) {
    float bx[kGroup], y[kGroup];
    for (int64_t r = lo; r < hi;) {
      const int64_t h = r / Dh, i = r % Dh;
      const int64_t count = std::min({kGroup, hi - r, Dh - i});
      float* s = a.state + r * N;
      for (int64_t t = 0; t < a.steps; ++t) {
        const float dt = a.dt[t * H + h];
        const float decay = std::exp(dt * a.a[h]);
        const float* x = a.x + (t * H + h) * Dh + i;
        for (int64_t j = 0; j < count; ++j) bx[j] = dt * x[j];
        const int64_t g = (t * a.groups + h / per_group) * N;
        row.ssm(s, count, a.b + g, a.c + g, decay, bx, y, N);
        float* out = a.out + (t * H + h) * Dh + i;
        for (int64_t j = 0; j < count; ++j) out[j] = y[j] + a.d[h] * x[j];
      }
      r += count;
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

}  // namespace moex::ops
