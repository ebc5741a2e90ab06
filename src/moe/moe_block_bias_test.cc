// MoeBlock with per-expert linear biases (OLMoE mlp_bias): the fused path and the fallback add
// them at the same point with the same f32 additions, so the two are bit-identical; and the
// biases reach the output on both paths (the engine once dropped them silently).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/isa.h"
#include "moe/moe_block.h"
#include "moe/router.h"
#include "moe/synthetic_experts.h"

namespace moex::moe {
namespace {

using kernels::MoeExpertsView;

std::vector<float> normal(size_t n, float stddev, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, stddev);
  std::vector<float> v(n);
  for (float& f : v) f = nd(rng);
  return v;
}

std::vector<float> run(const MoeExpertsView& ex, const char* fused, int64_t m, const std::vector<float>& x,
                       const std::vector<int32_t>& ids, const std::vector<float>& scores, int k) {
  MoePolicy pol;
  RawFusedSettings raw;
  raw.flag_fused = fused;
  pol.settings = resolve_fused_settings(raw);
  MoeBlock block(MoeLayer{ex}, pol);
  std::vector<float> out(size_t(m * ex.din()), -777.f);
  MoeBlockCall call;
  call.x = x.data();
  call.tokens = m;
  call.expert_ids = ids.data();
  call.scores = scores.data();
  call.top_k = k;
  call.out = out.data();
  MoeWorkspace ws;
  block.run(call, ws, nullptr);
  return out;
}

double nrms(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, s = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    d += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    s += double(b[i]) * b[i];
  }
  return std::sqrt(d / s);
}

TEST(MoeBlockBiases, FusedAndFallbackAgreeBitForBitAndBothApplyThem) {
  SyntheticExpertsArgs a;
  a.experts = 8;
  a.din = 256;
  a.dff = 128;
  SyntheticExperts se(a);
  const int k = 4;
  const std::vector<float> gate_b = normal(8 * 128, 0.5f, 1), up_b = normal(8 * 128, 0.5f, 2),
                           down_b = normal(8 * 256, 0.5f, 3);
  const std::vector<float> x = normal(256, 1.f, 4);
  const std::vector<int32_t> ids = {5, 1, 5, 7};  // a repeated expert
  const std::vector<float> scores = {0.4f, 0.3f, 0.2f, 0.1f};
  const Isa saved = active_isa();
  for (Isa isa : supported_isas()) {
    set_active_isa(isa);
    SCOPED_TRACE(isa_name(isa));
    const std::vector<float> plain = run(se.view(), "on", 1, x, ids, scores, k);
    // Each bias alone, then all three: fused == fallback exactly, and the output moves.
    for (int which = 0; which < 4; ++which) {
      MoeExpertsView ex = se.view();
      if (which == 0 || which == 3) ex.gate_bias = gate_b.data();
      if (which == 1 || which == 3) ex.up_bias = up_b.data();
      if (which == 2 || which == 3) ex.down_bias = down_b.data();
      const auto f = run(ex, "on", 1, x, ids, scores, k);
      const auto b = run(ex, "off", 1, x, ids, scores, k);
      EXPECT_EQ(0, std::memcmp(f.data(), b.data(), f.size() * sizeof(float))) << "bias set " << which;
      EXPECT_GT(nrms(f, plain), 1e-2) << "bias set " << which << " did not reach the output";
    }
    // The down bias alone adds sum_k s_k * b[e_k] (up to f32 rounding of the products).
    MoeExpertsView ex = se.view();
    ex.down_bias = down_b.data();
    const auto f = run(ex, "on", 1, x, ids, scores, k);
    for (int64_t h = 0; h < 256; ++h) {
      double want = plain[size_t(h)];
      for (int j = 0; j < k; ++j) want += double(scores[size_t(j)]) * down_b[size_t(ids[size_t(j)] * 256 + h)];
      EXPECT_NEAR(f[size_t(h)], want, 1e-5 * (std::fabs(want) + 1.0)) << "row " << h;
    }
  }
  set_active_isa(saved);
}

}  // namespace
}  // namespace moex::moe
