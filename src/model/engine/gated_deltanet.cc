// GatedDeltaNet: projections (de-interleaved for Qwen3-Next), causal conv with carried state,
// q/k normalization, decay and beta, the gated delta rule, the gated RMSNorm, out_proj.
#include "model/engine/gated_deltanet.h"

#include <algorithm>
#include <cmath>

#include "model/engine/scratch_grow.h"
#include "backend/cpu/softmax.h"

namespace moex::model::engine {

GatedDeltaNet::GatedDeltaNet(const backend::ModelBackend& be, const GatedDeltaNetWeights& w,
                             const GatedDeltaParams& p, int64_t hidden, double norm_eps)
    : be_(be),
      w_(w),
      p_(p),
      hidden_(hidden),
      norm_eps_(float(norm_eps)),
      conv_w_(ops::transpose_conv_weight(w.conv.data(), p.conv_dim(), p.conv_kernel)) {}

void GatedDeltaNet::project(const float* x, int64_t n, float* mixed,
                            GatedDeltaNetScratch& s) const {
  const int64_t kd = p_.key_dim(), vd = p_.value_dim(), C = p_.conv_dim(), hv = p_.v_heads;
  if (w_.qkv.w.valid()) {  // Qwen3.5: already [q; k; v], z, b, a
    const ops::Linear* lins[] = {&w_.qkv, &w_.z, &w_.b, &w_.a};
    float* outs[] = {mixed, s.z.data(), s.b.data(), s.a.data()};
    be_.linear_same_input(lins, outs, 4, x, n);
    return;
  }
  const ops::Linear* lins[] = {&w_.qkvz, &w_.ba};
  float* outs[] = {s.proj.data(), s.proj_ba.data()};
  be_.linear_same_input(lins, outs, 2, x, n);
  // Per key head h the qkvz row holds q_h [Dk], k_h [Dk], then v and z of its r = Hv/Hk value
  // heads [r Dv] each; the ba row holds b then a of those value heads [r] each.
  const int64_t dk = p_.k_head_dim, r = hv / p_.k_heads, rv = r * p_.v_head_dim;
  const int64_t group = 2 * dk + 2 * rv;
  for (int64_t t = 0; t < n; ++t) {
    const float* src = s.proj.data() + t * (2 * kd + 2 * vd);
    const float* src_ba = s.proj_ba.data() + t * 2 * hv;
    float* m = mixed + t * C;
    for (int64_t h = 0; h < p_.k_heads; ++h) {
      const float* g = src + h * group;
      std::copy_n(g, dk, m + h * dk);
      std::copy_n(g + dk, dk, m + kd + h * dk);
      std::copy_n(g + 2 * dk, rv, m + 2 * kd + h * rv);
      std::copy_n(g + 2 * dk + rv, rv, s.z.data() + t * vd + h * rv);
      std::copy_n(src_ba + h * 2 * r, r, s.b.data() + t * hv + h * r);
      std::copy_n(src_ba + h * 2 * r + r, r, s.a.data() + t * hv + h * r);
    }
  }
}

void GatedDeltaNet::forward(const float* x, int64_t n, float* out, float* state,
                            GatedDeltaNetScratch& s) const {
  const int64_t kd = p_.key_dim(), vd = p_.value_dim(), C = p_.conv_dim(), hv = p_.v_heads;
  const int64_t L = p_.conv_kernel, keep = L - 1, dk = p_.k_head_dim, dv = p_.v_head_dim;
  grow(be_, s.proj, n * (2 * kd + 2 * vd));
  grow(be_, s.proj_ba, n * 2 * hv);
  grow(be_, s.padded, (keep + n) * C);
  grow(be_, s.conv, n * C);
  grow(be_, s.q, n * kd);
  grow(be_, s.k, n * kd);
  grow(be_, s.v, n * vd);
  grow(be_, s.z, n * vd);
  grow(be_, s.b, n * hv);
  grow(be_, s.a, n * hv);
  grow(be_, s.y, n * vd);
  // padded = [conv state; this call's [q; k; v] rows]
  float* padded = s.padded.data();
  project(x, n, padded + keep * C, s);
  std::copy_n(state, keep * C, padded);
  // Causal depthwise conv (no bias) and SiLU, split into q, k, v.
  be_.causal_conv_silu({.x = padded, .w = conv_w_.data(), .bias = nullptr, .out = s.conv.data(),
                        .steps = n, .channels = C, .taps = L});
  for (int64_t t = 0; t < n; ++t) {
    const float* row = s.conv.data() + t * C;
    std::copy_n(row, kd, s.q.data() + t * kd);
    std::copy_n(row + kd, kd, s.k.data() + t * kd);
    std::copy_n(row + 2 * kd, vd, s.v.data() + t * vd);
  }
  std::copy_n(padded + n * C, keep * C, state);
  // mlx-lm normalize_qk: rms_norm with eps 1e-6 / Dk (so it is L2 normalization with eps 1e-6
  // on the sum of squares), q scaled by 1/Dk and k by Dk^-1/2.
  const float inv_scale = 1.f / std::sqrt(float(dk));
  const float rms_eps = float(1e-6 / double(dk));
  for (float* t : {s.q.data(), s.k.data()})
    be_.rms_norm({.x = t, .out = t, .weight = nullptr, .rows = n * p_.k_heads, .dim = dk,
                  .eps = rms_eps});
  const float q_scale = float(1.0 / double(dk));
  for (int64_t i = 0; i < n * kd; ++i) {
    s.q[size_t(i)] *= q_scale;
    s.k[size_t(i)] *= inv_scale;
  }
  // g = exp(-exp(A_log) * softplus(a + dt_bias)), beta = sigmoid(b); in place of a and b.
  for (int64_t t = 0; t < n; ++t)
    for (int64_t h = 0; h < hv; ++h) {
      float& a = s.a[size_t(t * hv + h)];
      float& b = s.b[size_t(t * hv + h)];
      a = std::exp(-std::exp(w_.a_log.data()[h]) * ops::softplus(a + w_.dt_bias.data()[h]));
      b = 1.f / (1.f + std::exp(-b));
    }
  be_.gated_delta({.q = s.q.data(), .k = s.k.data(), .v = s.v.data(), .g = s.a.data(),
                   .beta = s.b.data(), .state = state + keep * C, .out = s.y.data(), .steps = n,
                   .k_heads = p_.k_heads, .v_heads = hv, .k_dim = dk, .v_dim = dv});
  // RMSNorm per value head, times silu(z).
  be_.gated_rms_norm({.order = ops::GateOrder::kNormThenGate, .x = s.y.data(), .gate = s.z.data(),
                      .weight = w_.norm.data(), .out = s.y.data(), .rows = n * hv, .dim = dv,
                      .eps = norm_eps_});
  be_.linear({.lin = &w_.out_proj, .x = s.y.data(), .rows = n, .out = out});
}

}  // namespace moex::model::engine
