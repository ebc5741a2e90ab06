// Mamba2Mixer: in_proj, the causal conv with carried state, dt, the state-space recurrence,
// the gated group RMSNorm, out_proj.
#include "model/engine/mamba2.h"

#include <algorithm>
#include <cmath>

#include "model/engine/scratch_grow.h"
#include "model/engine/small_weights.h"
#include "backend/cpu/softmax.h"

namespace moex::model::engine {

Mamba2Mixer::Mamba2Mixer(const backend::ModelBackend& be, const Mamba2Weights& w, const Mamba2Params& p,
                         double norm_eps)
    : be_(be),
      w_(w),
      p_(p),
      norm_eps_(float(norm_eps)),
      conv_w_(placed(be, ops::FloatVec(ops::transpose_conv_weight(w.conv.host(), p.conv_dim(),
                                                                 p.conv_kernel)))) {
  std::vector<float> a(size_t(p.heads));
  for (int64_t h = 0; h < p.heads; ++h)
    a[size_t(h)] = p.a_log_holds_a ? w.a_log.host()[h] : -std::exp(w.a_log.host()[h]);
  a_ = placed(be, ops::FloatVec(std::move(a)));
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
  be_.copy(padded, state, keep * C);
  be_.copy_columns({.src = s.proj.data() + inner, .dst = padded + keep * C, .rows = n, .cols = C,
                    .src_stride = P, .dst_stride = C});
  be_.copy(state, padded + n * C, keep * C);
  // Causal depthwise conv (+ bias) and SiLU, split into x, B, C.
  be_.causal_conv_silu({.x = padded, .w = conv_w_.data(),
                        .bias = w_.conv_bias.empty() ? nullptr : w_.conv_bias.data(),
                        .out = s.conv.data(), .steps = n, .channels = C, .taps = L});
  be_.copy_columns({.src = s.conv.data(), .dst = s.x.data(), .rows = n, .cols = inner,
                    .src_stride = C, .dst_stride = inner});
  be_.copy_columns({.src = s.conv.data() + inner, .dst = s.b.data(), .rows = n, .cols = gn,
                    .src_stride = C, .dst_stride = gn});
  be_.copy_columns({.src = s.conv.data() + inner + gn, .dst = s.c.data(), .rows = n, .cols = gn,
                    .src_stride = C, .dst_stride = gn});
  // dt = clip(softplus(dt + dt_bias), time_step_limit)
  be_.dt_softplus({.x = s.proj.data() + inner + C, .bias = w_.dt_bias.data(), .out = s.dt.data(),
                   .rows = n, .heads = hm, .x_stride = P, .lo = float(p_.dt_min),
                   .hi = float(p_.dt_max)});
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
