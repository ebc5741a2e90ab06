// GatedDeltaNet: projections (de-interleaved for Qwen3-Next), causal conv with carried state,
// q/k normalization, decay and beta, the gated delta rule, the gated RMSNorm, out_proj.
#include "model/engine/gated_deltanet.h"

#include <cmath>

#include "model/engine/scratch_grow.h"
#include "model/engine/small_weights.h"

namespace moex::model::engine {

GatedDeltaNet::GatedDeltaNet(const backend::ModelBackend& be, const GatedDeltaNetWeights& w,
                             const GatedDeltaParams& p, int64_t hidden, double norm_eps)
    : be_(be),
      w_(w),
      p_(p),
      hidden_(hidden),
      norm_eps_(float(norm_eps)),
      conv_w_(placed(be, ops::FloatVec(ops::transpose_conv_weight(w.conv.host(), p.conv_dim(),
                                                                 p.conv_kernel)))) {
  // The decay's A, formed once: -exp(A_log) as mlx-lm does, or the file's A as it is (a GGUF
  // file stores llama.cpp's ssm_a, the converter's -exp(A_log)).
  std::vector<float> a(w.a_log.host(), w.a_log.host() + p.v_heads);
  if (!p.a_log_holds_a)
    for (float& v : a) v = -std::exp(v);
  neg_a_ = placed(be, ops::FloatVec(std::move(a)));
}

void GatedDeltaNet::project(const float* x, int64_t n, float* mixed,
                            GatedDeltaNetScratch& s) const {
  const int64_t kd = p_.key_dim(), vd = p_.value_dim(), C = p_.conv_dim(), hv = p_.v_heads;
  if (w_.qkv.w.valid() && w_.b.w.valid()) {  // Qwen3.5: already [q; k; v], z, b, a
    const ops::Linear* lins[] = {&w_.qkv, &w_.z, &w_.b, &w_.a};
    float* outs[] = {mixed, s.z.data(), s.b.data(), s.a.data()};
    be_.linear_same_input(lins, outs, 4, x, n);
    return;
  }
  const int64_t dk = p_.k_head_dim, r = hv / p_.k_heads, rv = r * p_.v_head_dim;
  if (w_.qkv.w.valid()) {  // a Qwen3-Next GGUF file: [q; k; v] and z, then the per-head ba
    const ops::Linear* lins[] = {&w_.qkv, &w_.z, &w_.ba};
    float* outs[] = {mixed, s.z.data(), s.proj_ba.data()};
    be_.linear_same_input(lins, outs, 3, x, n);
    split_ba(n, s);
    return;
  }
  const ops::Linear* lins[] = {&w_.qkvz, &w_.ba};
  float* outs[] = {s.proj.data(), s.proj_ba.data()};
  be_.linear_same_input(lins, outs, 2, x, n);
  // Per key head h the qkvz row holds q_h [Dk], k_h [Dk], then v and z of its r = Hv/Hk value
  // heads [r Dv] each.
  const int64_t group = 2 * dk + 2 * rv;
  // One block per key head: (offset in its qkvz group, width, destination, its row stride).
  const struct { const float* src; int64_t width; float* dst; int64_t stride; } parts[] = {
      {s.proj.data(), dk, mixed, C},
      {s.proj.data() + dk, dk, mixed + kd, C},
      {s.proj.data() + 2 * dk, rv, mixed + 2 * kd, C},
      {s.proj.data() + 2 * dk + rv, rv, s.z.data(), vd},
  };
  for (const auto& part : parts)
    be_.copy_columns({.src = part.src, .dst = part.dst, .rows = n, .cols = part.width,
                      .src_stride = 2 * kd + 2 * vd, .dst_stride = part.stride,
                      .blocks = p_.k_heads, .src_block_stride = group,
                      .dst_block_stride = part.width});
  split_ba(n, s);
}

// The ba row holds, per key head, b then a of its r = Hv/Hk value heads [r] each.
void GatedDeltaNet::split_ba(int64_t n, GatedDeltaNetScratch& s) const {
  const int64_t hv = p_.v_heads, r = hv / p_.k_heads;
  for (int64_t half = 0; half < 2; ++half)
    be_.copy_columns({.src = s.proj_ba.data() + half * r, .dst = half ? s.a.data() : s.b.data(),
                      .rows = n, .cols = r, .src_stride = 2 * hv, .dst_stride = hv,
                      .blocks = p_.k_heads, .src_block_stride = 2 * r, .dst_block_stride = r});
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
  be_.copy(padded, state, keep * C);
  // Causal depthwise conv (no bias) and SiLU, split into q, k, v.
  be_.causal_conv_silu({.x = padded, .w = conv_w_.data(), .bias = nullptr, .out = s.conv.data(),
                        .steps = n, .channels = C, .taps = L});
  const struct { int64_t offset, width; float* dst; } splits[] = {
      {0, kd, s.q.data()}, {kd, kd, s.k.data()}, {2 * kd, vd, s.v.data()}};
  for (const auto& split : splits)
    be_.copy_columns({.src = s.conv.data() + split.offset, .dst = split.dst, .rows = n,
                      .cols = split.width, .src_stride = C, .dst_stride = split.width});
  be_.copy(state, padded + n * C, keep * C);
  // mlx-lm normalize_qk: rms_norm with eps 1e-6 / Dk (so it is L2 normalization with eps 1e-6
  // on the sum of squares), q scaled by 1/Dk and k by Dk^-1/2.
  const float inv_scale = 1.f / std::sqrt(float(dk));
  const float rms_eps = float(1e-6 / double(dk));
  for (float* t : {s.q.data(), s.k.data()})
    be_.rms_norm({.x = t, .out = t, .weight = nullptr, .rows = n * p_.k_heads, .dim = dk,
                  .eps = rms_eps});
  be_.scale(s.q.data(), n * kd, float(1.0 / double(dk)));
  be_.scale(s.k.data(), n * kd, inv_scale);
  // g = exp(-exp(A_log) * softplus(a + dt_bias)), beta = sigmoid(b); in place of a and b.
  be_.delta_gates({.a = s.a.data(), .b = s.b.data(), .neg_exp_a_log = neg_a_.data(),
                   .dt_bias = w_.dt_bias.data(), .rows = n, .heads = hv});
  be_.gated_delta({.q = s.q.data(), .k = s.k.data(), .v = s.v.data(), .g = s.a.data(),
                   .beta = s.b.data(), .state = state + keep * C, .out = s.y.data(), .steps = n,
                   .k_heads = p_.k_heads, .v_heads = hv, .k_dim = dk, .v_dim = dv});
  // RMSNorm per value head, times silu(z).
  be_.gated_rms_norm({.order = ops::GateOrder::kNormThenGate, .x = s.y.data(), .gate = s.z.data(),
                      .weight = w_.norm.data(), .out = s.y.data(), .rows = n * hv, .dim = dv,
                      .eps = norm_eps_});
  if (!p_.v_tiled_out) {
    be_.linear({.lin = &w_.out_proj, .x = s.y.data(), .rows = n, .out = out});
    return;
  }
  // out_proj's columns are in the file's tiled order: value head g r + j (key head g) goes to
  // position j Hk + g.
  grow(be_, s.y_tiled, n * vd);
  const int64_t r = hv / p_.k_heads;
  for (int64_t j = 0; j < r; ++j)
    be_.copy_columns({.src = s.y.data() + j * dv, .dst = s.y_tiled.data() + j * p_.k_heads * dv,
                      .rows = n, .cols = dv, .src_stride = vd, .dst_stride = vd,
                      .blocks = p_.k_heads, .src_block_stride = r * dv, .dst_block_stride = dv});
  be_.linear({.lin = &w_.out_proj, .x = s.y_tiled.data(), .rows = n, .out = out});
}

}  // namespace moex::model::engine
