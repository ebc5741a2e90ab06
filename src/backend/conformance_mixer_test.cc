// Conformance cases of the recurrences (gated_delta, ssm_scan) and of the MoE paths through
// ModelBackend::moe() (fused decode and the gather_qmm fallback). Recurrence bound: the
// computation is sums and products only, so |fl - exact| <= gamma_N times the same recurrence
// run on absolute values (N: the roundings on the longest dependency path).
#include <cmath>
#include <memory>
#include <string>

#include "kernels/kernels_test_util.h"
#include "backend/conformance.h"
#include "moe/moe_backend.h"
#include "moe/moe_workspace.h"

namespace moex::backend::conformance {
namespace {

double gamma(double n) { return n * kU / (1.0 - n * kU); }

struct DeltaSpec {
  int64_t steps, k_heads, v_heads, k_dim, v_dim;
};

void add_gated_delta(std::vector<Case>& cases, const DeltaSpec& s, uint64_t seed) {
  const int64_t kd = s.k_dim, vd = s.v_dim, hv = s.v_heads, hk = s.k_heads;
  const float qk_scale = 1.f / std::sqrt(float(kd));
  auto q =
      std::make_shared<std::vector<float>>(random_vec(s.steps * hk * kd, seed, -qk_scale, qk_scale));
  auto k = std::make_shared<std::vector<float>>(
      random_vec(s.steps * hk * kd, seed + 1, -qk_scale, qk_scale));
  auto v = std::make_shared<std::vector<float>>(random_vec(s.steps * hv * vd, seed + 2));
  auto g = std::make_shared<std::vector<float>>(random_vec(s.steps * hv, seed + 3, 0.8f, 1.f));
  auto beta = std::make_shared<std::vector<float>>(random_vec(s.steps * hv, seed + 4, 0.f, 1.f));
  auto state = std::make_shared<std::vector<float>>(random_vec(hv * vd * kd, seed + 5, -0.5f, 0.5f));
  Case c;
  c.id = "gated_delta/f32/steps=" + std::to_string(s.steps) + ",k_heads=" + std::to_string(hk) +
         ",v_heads=" + std::to_string(hv) + ",k_dim=" + std::to_string(kd) +
         ",v_dim=" + std::to_string(vd);
  c.parts = {s.steps * hv * vd, hv * vd * kd};  // the outputs, then the state after the call
  c.run = [=](const ModelBackend& b, Stage& st, float* const* outs) {
    st.fill(outs[1], *state);
    b.gated_delta({.q = st(*q),
                   .k = st(*k),
                   .v = st(*v),
                   .g = st(*g),
                   .beta = st(*beta),
                   .state = outs[1],
                   .out = outs[0],
                   .steps = s.steps,
                   .k_heads = hk,
                   .v_heads = hv,
                   .k_dim = kd,
                   .v_dim = vd});
  };
  c.bound = [=](Isa) {
    // Per step: the decay (1), S k (kd), beta (v - S k) (2), the update (2); y adds kd + 1.
    const double gm = gamma(double(s.steps * (kd + 5) + kd + 1));
    std::vector<double> ms(state->size()), out(size_t(s.steps * hv * vd));
    for (size_t i = 0; i < ms.size(); ++i) ms[i] = std::fabs((*state)[i]);
    for (int64_t t = 0; t < s.steps; ++t)
      for (int64_t h = 0; h < hv; ++h) {
        const int64_t kh = h / (hv / hk);
        const float* kt = k->data() + (t * hk + kh) * kd;
        const float* qt = q->data() + (t * hk + kh) * kd;
        const double ag = std::fabs((*g)[size_t(t * hv + h)]),
                     ab = std::fabs((*beta)[size_t(t * hv + h)]);
        for (int64_t i = 0; i < vd; ++i) {
          double* row = ms.data() + (h * vd + i) * kd;
          double sk = 0, y = 0;
          for (int64_t j = 0; j < kd; ++j) sk += (row[j] *= ag) * std::fabs(kt[j]);
          const double d = ab * (std::fabs((*v)[size_t((t * hv + h) * vd + i)]) + sk);
          for (int64_t j = 0; j < kd; ++j) y += (row[j] += d * std::fabs(kt[j])) * std::fabs(qt[j]);
          out[size_t((t * hv + h) * vd + i)] = gm * y;
        }
      }
    for (double& m : ms) out.push_back(gm * m);
    return out;
  };
  c.rule = "gamma_N x the recurrence on absolute values, per side";
  cases.push_back(std::move(c));
}

struct ScanSpec {
  int64_t steps, heads, head_dim, groups, state_dim;
};

void add_ssm_scan(std::vector<Case>& cases, const ScanSpec& s, uint64_t seed) {
  const int64_t h_ = s.heads, p_ = s.head_dim, g_ = s.groups, n_ = s.state_dim;
  auto x = std::make_shared<std::vector<float>>(random_vec(s.steps * h_ * p_, seed));
  auto dt = std::make_shared<std::vector<float>>(random_vec(s.steps * h_, seed + 1, 0.01f, 0.5f));
  auto a = std::make_shared<std::vector<float>>(random_vec(h_, seed + 2, -4.f, -0.1f));
  auto b = std::make_shared<std::vector<float>>(random_vec(s.steps * g_ * n_, seed + 3));
  auto cc = std::make_shared<std::vector<float>>(random_vec(s.steps * g_ * n_, seed + 4));
  auto d = std::make_shared<std::vector<float>>(random_vec(h_, seed + 5));
  auto state = std::make_shared<std::vector<float>>(random_vec(h_ * p_ * n_, seed + 6));
  Case c;
  c.id = "ssm_scan/f32/steps=" + std::to_string(s.steps) + ",heads=" + std::to_string(h_) +
         ",head_dim=" + std::to_string(p_) + ",groups=" + std::to_string(g_) +
         ",state=" + std::to_string(n_);
  c.parts = {s.steps * h_ * p_, h_ * p_ * n_};
  c.run = [=](const ModelBackend& be, Stage& st, float* const* outs) {
    st.fill(outs[1], *state);
    be.ssm_scan({.x = st(*x),
                 .dt = st(*dt),
                 .a = st(*a),
                 .b = st(*b),
                 .c = st(*cc),
                 .d = st(*d),
                 .state = outs[1],
                 .out = outs[0],
                 .steps = s.steps,
                 .heads = h_,
                 .head_dim = p_,
                 .groups = g_,
                 .state_dim = n_});
  };
  c.bound = [=](Isa) {
    // Per step: dt A and its exp (counted as 4 roundings), dt x, its product with B, the decay
    // product and the add; y adds the n-term sum with C and D x (n + 3).
    const double gm = gamma(double(s.steps * 9 + n_ + 3));
    std::vector<double> ms(state->size()), out(size_t(s.steps * h_ * p_));
    for (size_t i = 0; i < ms.size(); ++i) ms[i] = std::fabs((*state)[i]);
    for (int64_t t = 0; t < s.steps; ++t)
      for (int64_t h = 0; h < h_; ++h) {
        const int64_t g = h / (h_ / g_);
        const double dth = (*dt)[size_t(t * h_ + h)];
        const double decay = std::exp(dth * (*a)[size_t(h)]);
        const float* bt = b->data() + (t * g_ + g) * n_;
        const float* ct = cc->data() + (t * g_ + g) * n_;
        for (int64_t i = 0; i < p_; ++i) {
          const double xv = std::fabs((*x)[size_t((t * h_ + h) * p_ + i)]);
          double* row = ms.data() + (h * p_ + i) * n_;
          double y = std::fabs((*d)[size_t(h)]) * xv;
          for (int64_t j = 0; j < n_; ++j)
            y += (row[j] = decay * row[j] + dth * xv * std::fabs(bt[j])) * std::fabs(ct[j]);
          out[size_t((t * h_ + h) * p_ + i)] = gm * y;
        }
      }
    for (double& m : ms) out.push_back(gm * m);
    return out;
  };
  c.rule = "gamma_N x the recurrence on absolute values, per side";
  cases.push_back(std::move(c));
}

// The routed experts of one MoE layer through the backend's MoE contract; `fused` picks the
// path. Bound: kernels_test_util's dense_moe_error_bound at the active ISA, per token, per side.
void add_moe(std::vector<Case>& cases, bool fused, const kernels::testing::ExpertsSpec& spec,
             int64_t tokens, int top_k, bool duplicates, uint64_t seed) {
  auto ex = std::make_shared<kernels::testing::RandomExperts>(
      kernels::testing::make_random_experts(spec, seed));
  const int64_t din = spec.din;
  auto x = std::make_shared<std::vector<float>>(random_vec(tokens * din, seed + 10));
  auto scores = std::make_shared<std::vector<float>>(random_vec(tokens * top_k, seed + 11, 0.f, 1.f));
  auto ids = std::make_shared<std::vector<int32_t>>();
  for (int64_t t = 0; t < tokens; ++t)
    for (int k = 0; k < top_k; ++k)
      ids->push_back(duplicates && k == 1 ? (*ids)[size_t(t * top_k)]
                                          : int32_t((t * 5 + k * 3 + 1) % spec.experts));
  const std::string fmt = spec.mode == quant::Mode::kAffine
                              ? "affine" + std::to_string(spec.gate_up_bits) + "+" +
                                    std::to_string(spec.down_bits) + "g" +
                                    std::to_string(spec.group_size)
                          : spec.mode == quant::Mode::kFloat ? std::string(dtype_name(spec.sb))
                                                             : quant::mode_name(spec.mode);
  Case c;
  c.id = std::string(fused ? "moe_fused/" : "moe_fallback/") + fmt + "/" +
         kernels::activation_name(spec.act) + ",tokens=" + std::to_string(tokens) +
         ",experts=" + std::to_string(spec.experts) + ",din=" + std::to_string(din) +
         ",dff=" + std::to_string(spec.dff) + ",top_k=" + std::to_string(top_k) +
         (duplicates ? ",duplicate_ids" : "");
  c.parts = {tokens * din};
  c.host_memory = true;  // the MoE backend takes host x, ids and scores and writes host out
  c.run = [=](const ModelBackend& b, Stage&, float* const* outs) {
    // The MoE backend paired with b: the device's for CUDA, else the CPU's.
    const moe::MoeBackend& m = std::string(b.name()) == "cuda"
                                   ? moe::moe_backend(moe::Backend::kCuda)
                                   : moe::cpu_moe_backend();
    const auto prepared = m.prepare(ex->view, "conformance experts");
    moe::MoeWorkspace ws;
    const moe::RoutedCall call{.x = x->data(),
                               .tokens = tokens,
                               .expert_ids = ids->data(),
                               .scores = scores->data(),
                               .top_k = top_k,
                               .out = outs[0]};
    if (fused)
      m.fused(*prepared, call, ws);
    else
      m.fallback(*prepared, call, ws);
  };
  c.bound = [=](Isa) {
    std::vector<double> v;
    for (int64_t t = 0; t < tokens; ++t) {
      const auto b = kernels::testing::dense_moe_error_bound(ex->view, x->data() + t * din,
                                                             ids->data() + t * top_k,
                                                             scores->data() + t * top_k, top_k);
      v.insert(v.end(), b.begin(), b.end());
    }
    return v;
  };
  c.rule = "dense_moe_error_bound per token, per side";
  cases.push_back(std::move(c));
}

}  // namespace

// LFM2's short conv: the output and the advanced state, one shared scalar code (bit equality).
void add_short_conv(std::vector<Case>& cases, int64_t steps, int64_t channels, int64_t taps,
                    bool bias, uint64_t seed) {
  auto bcx = std::make_shared<std::vector<float>>(random_vec(steps * 3 * channels, seed, -2.f, 2.f));
  auto w = std::make_shared<std::vector<float>>(random_vec(channels * taps, seed + 1));
  auto bs = std::make_shared<std::vector<float>>(random_vec(channels, seed + 2));
  auto state = std::make_shared<std::vector<float>>(random_vec((taps - 1) * channels, seed + 3));
  Case c;
  c.id = "short_conv/f32/steps=" + std::to_string(steps) + ",channels=" +
         std::to_string(channels) + ",taps=" + std::to_string(taps) + (bias ? ",bias" : "");
  c.parts = {steps * channels, (taps - 1) * channels};
  c.run = [=](const ModelBackend& b, Stage& st, float* const* outs) {
    if (taps > 1) st.fill(outs[1], *state);
    b.short_conv({.bcx = st(*bcx),
                  .w = st(*w),
                  .bias = bias ? st(*bs) : nullptr,
                  .state = taps > 1 ? outs[1] : st.scratch(1),
                  .padded = st.scratch((taps - 1 + steps) * channels),
                  .out = outs[0],
                  .steps = steps,
                  .channels = channels,
                  .taps = taps});
  };
  c.bound = shared_code(steps * channels + (taps - 1) * channels);
  c.rule = "bit-equal: ops::short_conv is one scalar code for every ISA";
  cases.push_back(std::move(c));
}

void add_mixer_cases(std::vector<Case>& cases) {
  add_short_conv(cases, 1, 1024, 3, false, 1400);  // LFM2's decode step (L = 3)
  add_short_conv(cases, 7, 96, 3, true, 1410);
  add_short_conv(cases, 2, 13, 4, true, 1420);
  add_gated_delta(cases, {.steps = 1, .k_heads = 2, .v_heads = 4, .k_dim = 64, .v_dim = 32}, 1100);
  add_gated_delta(cases, {.steps = 5, .k_heads = 1, .v_heads = 2, .k_dim = 40, .v_dim = 24}, 1110);
  add_gated_delta(cases, {.steps = 2, .k_heads = 3, .v_heads = 3, .k_dim = 7, .v_dim = 5}, 1120);
  add_ssm_scan(cases, {.steps = 1, .heads = 4, .head_dim = 16, .groups = 1, .state_dim = 64}, 1200);
  add_ssm_scan(cases, {.steps = 6, .heads = 4, .head_dim = 8, .groups = 2, .state_dim = 40}, 1210);
  add_ssm_scan(cases, {.steps = 2, .heads = 3, .head_dim = 5, .groups = 3, .state_dim = 13}, 1220);
}

void add_moe_cases(std::vector<Case>& cases) {
  using kernels::Activation;
  using Spec = kernels::testing::ExpertsSpec;
  for (bool fused : {true, false}) {
    add_moe(cases, fused, Spec{.experts = 8, .din = 256, .dff = 128}, 1, 4, false, 1300);
    add_moe(cases, fused,
            Spec{.experts = 6,
                 .din = 128,
                 .dff = 96,
                 .gate_up_bits = 3,
                 .down_bits = 6,
                 .group_size = 32,
                 .act = Activation::kGeGLU},
            2, 2, true, 1310);
    add_moe(cases, fused,
            Spec{.experts = 4,
                 .din = 64,
                 .dff = 64,
                 .act = Activation::kSwiGLUOai,
                 .mode = quant::Mode::kMxfp4},
            1, 2, false, 1320);
    add_moe(cases, fused,
            Spec{.experts = 4,
                 .din = 64,
                 .dff = 32,
                 .sb = DType::BF16,
                 .act = Activation::kSquaredReLU,
                 .mode = quant::Mode::kFloat},
            1, 3, false, 1330);
  }
  // 64 (token, expert) pairs: the fallback's sorted path (MoeBackend::kSortPairsThreshold).
  add_moe(cases, false, Spec{.experts = 8, .din = 64, .dff = 64, .mode = quant::Mode::kNvfp4}, 16,
          4, false, 1340);
}

}  // namespace moex::backend::conformance
