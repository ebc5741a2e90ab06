// Mamba2Mixer: in_proj, the causal conv with carried state, dt, the state-space recurrence,
// the gated group RMSNorm, out_proj.
#include "model/engine/mamba2.h"

#include <algorithm>
#include <cmath>

#include "model/engine/scratch_grow.h"
#include "backend/cpu/softmax.h"

namespace moex::model::engine {

Mamba2Mixer::Mamba2Mixer(const backend::ModelBackend& be, const Mamba2Weights& w, const Mamba2Params& p,
                         double norm_eps)
    : be_(be),
      w_(w),
      p_(p),
      norm_eps_(float(norm_eps)),
      a_(size_t(p.heads)),
      conv_w_(ops::transpose_conv_weight(w.conv.data(), p.conv_dim(), p.conv_kernel)) {
  for (int64_t h = 0; h < p.heads; ++h) a_[size_t(h)] = -std::exp(w.a_log.data()[h]);
}

void Mamba2Mixer::forward(const float* x, int64_t n, float* out, float* state,
                          Mamba2Scratch& s) const {
  const int64_t inner = p_.inner(), C = p_.conv_dim(), P = p_.in_proj_dim(), hm = p_.heads;
  const int64_t L = p_.conv_kernel, keep = L - 1, gn = p_.groups * p_.state_dim;
  grow(be_, s.proj, n * P);
  grow(be_, s.padded, (keep + n) * C);
  grow(be_, s.conv, n * C);
  grow(be_, s.x, n * inner);
  grow(be_, s.b, n * gn);
  grow(be_, s.c, n * gn);
  grow(be_, s.dt, n * hm);
  grow(be_, s.y, n * inner);
  be_.linear({.lin = &w_.in_proj, .x = x, .rows = n, .out = s.proj.data()});
  // padded = [conv state; this call's xBC rows]
  float* padded = s.padded.data();
  std::copy_n(state, keep * C, padded);
  for (int64_t t = 0; t < n; ++t)
    std::copy_n(s.proj.data() + t * P + inner, C, padded + (keep + t) * C);
  std::copy_n(padded + n * C, keep * C, state);
  // Causal depthwise conv (+ bias) and SiLU, split into x, B, C.
  be_.causal_conv_silu({.x = padded, .w = conv_w_.data(),
                        .bias = w_.conv_bias.empty() ? nullptr : w_.conv_bias.data(),
                        .out = s.conv.data(), .steps = n, .channels = C, .taps = L});
  for (int64_t t = 0; t < n; ++t) {
    const float* row = s.conv.data() + t * C;
    std::copy_n(row, inner, s.x.data() + t * inner);
    std::copy_n(row + inner, gn, s.b.data() + t * gn);
    std::copy_n(row + inner + gn, gn, s.c.data() + t * gn);
  }
  // dt = clip(softplus(dt + dt_bias), time_step_limit)
  for (int64_t t = 0; t < n; ++t)
    for (int64_t h = 0; h < hm; ++h) {
      const float v =
          ops::softplus(s.proj[size_t(t * P + inner + C + h)] + w_.dt_bias.data()[h]);
      s.dt[size_t(t * hm + h)] = std::clamp(v, float(p_.dt_min), float(p_.dt_max));
    }
  be_.ssm_scan({.x = s.x.data(), .dt = s.dt.data(), .a = a_.data(), .b = s.b.data(),
                .c = s.c.data(), .d = w_.d.data(), .state = state + keep * C, .out = s.y.data(),
                .steps = n, .heads = hm, .head_dim = p_.head_dim, .groups = p_.groups,
                .state_dim = p_.state_dim});
  // y = silu(z) * y, then RMSNorm over each group's inner / groups features (no weight),
  // then times the norm weight (mlx-lm MambaRMSNormGated); z is the first `inner` of each
  // in_proj row.
  for (int64_t t = 0; t < n; ++t)
    be_.gated_rms_norm({.order = ops::GateOrder::kGateThenNorm, .x = s.y.data() + t * inner,
                        .gate = s.proj.data() + t * P, .weight = w_.norm.data(),
                        .out = s.y.data() + t * inner, .rows = 1, .dim = inner,
                        .groups = p_.groups, .eps = norm_eps_});
  be_.linear({.lin = &w_.out_proj, .x = s.y.data(), .rows = n, .out = out});
}

}  // namespace moex::model::engine
