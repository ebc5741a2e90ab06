// RouterProjection: quantized (gather_qmm, single expert) and f32 logits against an f64
// reference from the dequantized weights.
#include "moe/router_projection.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/error.h"
#include "moe/synthetic_experts.h"
#include "quant/format.h"

namespace moex::moe {
namespace {

double deq(const kernels::QuantWeightsView& w, int64_t r, int64_t i) {
  const size_t g = size_t(w.sb_offset(0, r) + i / w.group_size);
  return double(load_as_f32(w.scales, w.sb_dtype, g)) *
             double(quant::extract_q(w.row(0, r), i, w.bits)) +
         double(load_as_f32(w.biases, w.sb_dtype, g));
}

TEST(RouterProjection, QuantizedAndF32MatchReference) {
  const int64_t e = 64, din = 256, m = 3;
  SyntheticExpertsArgs a;
  a.experts = 1;
  a.din = din;
  a.dff = e;  // up projection: [1][E][Din]
  a.up_bits = 8;
  SyntheticExperts se(a);
  const kernels::QuantWeightsView& w = se.view().up;
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  std::vector<float> x(m * din), wf(e * din);
  for (float& v : x) v = nd(rng);
  std::vector<double> ref(m * e, 0.0);
  for (int64_t r = 0; r < e; ++r)
    for (int64_t i = 0; i < din; ++i) wf[r * din + i] = float(deq(w, r, i));
  for (int64_t t = 0; t < m; ++t)
    for (int64_t r = 0; r < e; ++r)
      for (int64_t i = 0; i < din; ++i) ref[t * e + r] += double(wf[r * din + i]) * x[t * din + i];

  auto nrms = [&](const std::vector<float>& got) {
    double num = 0, den = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      num += (got[i] - ref[i]) * (got[i] - ref[i]);
      den += ref[i] * ref[i];
    }
    return std::sqrt(num / den);
  };
  std::vector<float> lq(m * e), lf(m * e);
  RouterProjection q(w);
  q.run(x.data(), m, lq.data());
  RouterProjection f(wf.data(), e, din);
  f.run(x.data(), m, lf.data());
  EXPECT_LT(nrms(lq), 5e-4);
  EXPECT_LT(nrms(lf), 16 * 1.2e-7 * std::sqrt(double(din)));
  EXPECT_EQ(q.experts(), e);

  kernels::QuantWeightsView stacked = se.view().up;
  stacked.experts = 2;
  EXPECT_THROW(RouterProjection{stacked}, Error);
}

}  // namespace
}  // namespace moex::moe
