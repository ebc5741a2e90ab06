// The precision tiers' scalar reference (round_to_levels) against its stated bound, and the
// VNNI kernels of each tier against the f32 dot of that reference's rounded activations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "kernels/kernels_test_util.h"
#include "kernels/qdot.h"

namespace moex::kernels {
namespace {

using testing::dequant_row;
using testing::make_random_quant;
using testing::random_normal;

constexpr Precision kAllTiers[] = {Precision::kFast, Precision::kStandard, Precision::kExact};

// Activations with the ranges real ones have: normal values, one outlier group, a group of
// exact half steps of the one-level tier, an all-zero group and a subnormal-only group.
std::vector<float> hard_activations(int64_t k, int gs) {
  std::vector<float> x = random_normal(k, 1.f, 77);
  for (int64_t i = 0; i < gs; ++i) x[size_t(i)] *= 300.f;  // group 0: outliers
  for (int64_t i = gs; i < 2 * gs; ++i)  // group 1: (j + 1/2) steps of 127 / max
    x[size_t(i)] = i == gs ? 127.f : float(int(i % 17) - 8) + 0.5f;
  for (int64_t i = 2 * gs; i < 3 * gs; ++i) x[size_t(i)] = 0.f;
  for (int64_t i = 3 * gs; i < 4 * gs; ++i) x[size_t(i)] = 1e-40f;
  return x;
}

TEST(Precision, DefaultIsExact) { EXPECT_EQ(kDefaultPrecision, Precision::kExact); }

// |x - x'| <= c/2 per element (c = the group max times the tier's step), groups below
// kTinyGroupMax read as zeros, and each level dropped costs at least 2^6 in normalized RMS.
TEST(Precision, RoundToLevelsStaysWithinHalfAStep) {
  const int gs = 64;
  const int64_t k = 1024;
  const std::vector<float> x = hard_activations(k, gs);
  double nrms[4] = {};
  for (Precision p : kAllTiers) {
    const int lv = static_cast<int>(p);
    std::vector<float> r(static_cast<size_t>(k), -1.f);
    round_to_levels(x.data(), k, gs, lv, r.data());
    double sq = 0.0, ref_sq = 0.0;
    for (int64_t g0 = 0; g0 < k; g0 += gs) {
      float m = 0.f;
      for (int64_t i = g0; i < g0 + gs; ++i) m = std::max(m, std::fabs(x[size_t(i)]));
      const double c = m >= kTinyGroupMax ? double(m) * quantized_x_step(lv) : 0.0;
      for (int64_t i = g0; i < g0 + gs; ++i) {
        const double d = double(x[size_t(i)]) - r[size_t(i)];
        if (c == 0.0) {
          EXPECT_EQ(r[size_t(i)], 0.f) << "tiny group " << g0 / gs << " tier " << lv;
          continue;
        }
        // c/2 from the rounding, plus the f32 rounding of the result (2^-24 of |x'|).
        EXPECT_LE(std::fabs(d), c / 2 + std::fabs(r[size_t(i)]) * 0x1p-24)
            << "element " << i << " tier " << lv;
        sq += d * d;
        ref_sq += double(x[size_t(i)]) * x[size_t(i)];
      }
    }
    nrms[lv] = std::sqrt(sq / ref_sq);
  }
  EXPECT_GT(nrms[1], 64 * nrms[2]);
  EXPECT_GT(nrms[2], 64 * nrms[3]);
  // One level is the closed form round(127 x / max) * max / 127 (group 0).
  std::vector<float> r1(static_cast<size_t>(k));
  round_to_levels(x.data(), k, gs, 1, r1.data());
  float m = 0.f;
  for (int i = 0; i < gs; ++i) m = std::max(m, std::fabs(x[size_t(i)]));
  const float c = m * float(quantized_x_step(1));
  for (int i = 0; i < gs; ++i)
    EXPECT_FLOAT_EQ(r1[size_t(i)], std::nearbyint(x[size_t(i)] * (1.f / c)) * c) << i;
}

// Each integer kernel's (VNNI, AVX2 4-bit) dot equals sum_g s_g sum q_i x'_i + b_g sum x_i with x' =
// round_to_levels(x) at its tier (the bias term takes the exact f32 group sums of x), within
// the f32 rounding of the sums; and for the fast and standard tiers it is
// far closer to that than to the dot with x itself (a kernel running another tier's rounding,
// or a level computed on the wrong group, fails here). The same for AVX2's 4-bit kernels.
TEST(Precision, IntegerKernelsDotTheirTiersRounding) {
  const int64_t k = 1024, n = 24;
  int ran = 0;
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {  // VNNI: 2/4/8 bits; AVX2: its 4-bit kernels
    if (!isa_supported(isa)) continue;
    ++ran;
    for (int bits : {2, 4, 8})
    for (int gs : {32, 64, 128}) {
      if (isa == Isa::kAvx2 && bits != 4) continue;
      auto q = make_random_quant(1, n, k, bits, gs, DType::BF16, 90 + bits + gs);
      const std::vector<float> x = hard_activations(k, gs);
      for (Precision p : kAllTiers) {
        const QdotKernel& kern = qdot_kernel(isa, bits, p);
        ASSERT_EQ(kern.x_levels, static_cast<int>(p)) << kern.name;
        std::vector<float> xr(static_cast<size_t>(k));
        round_to_levels(x.data(), k, gs, kern.x_levels, xr.data());
        PreparedVectors px;
        px.prepare(kern, x.data(), 1, k, k, gs);
        std::vector<float> got(static_cast<size_t>(n));
        kern.dot_rows({&q.view, 0, 0, n, px.at(0), got.data()});
        double to_rounded = 0.0, to_plain = 0.0, ref_sq = 0.0;
        for (int64_t r = 0; r < n; ++r) {
          const std::vector<float> w = dequant_row(q.view, 0, r);
          double dr = 0.0, dp = 0.0, terms = 0.0;
          for (int64_t i = 0; i < k; ++i) {
            const double b = load_as_f32(q.view.biases, q.view.sb_dtype,
                                         size_t(q.view.sb_offset(0, r) + i / gs));
            dr += (double(w[size_t(i)]) - b) * xr[size_t(i)] + b * x[size_t(i)];
            dp += double(w[size_t(i)]) * x[size_t(i)];
            terms += std::fabs(double(w[size_t(i)]) * xr[size_t(i)]) + std::fabs(b * x[size_t(i)]);
          }
          const double e = double(got[size_t(r)]) - dr;
          // f32 sums of at most k / 16 + 48 steps (groups, blocks, lanes), with margin 2.
          EXPECT_LE(std::fabs(e), 2.0 * double(k / 16 + 48) * 0x1p-24 * terms + 1e-30)
              << kern.name << " group " << gs << " row " << r;
          to_rounded += e * e;
          to_plain += (double(got[size_t(r)]) - dp) * (double(got[size_t(r)]) - dp);
          ref_sq += dp * dp;
        }
        if (p != Precision::kExact) {
          EXPECT_LT(8 * std::sqrt(to_rounded), std::sqrt(to_plain))
              << kern.name << " group " << gs << ": nRMS to its tier's rounding "
              << std::sqrt(to_rounded / ref_sq) << ", to f32 x " << std::sqrt(to_plain / ref_sq);
        }
      }
    }
  }
  if (ran == 0) GTEST_SKIP() << "no AVX2 or AVX-512 on this CPU, so no tier kernel to check";
}

}  // namespace
}  // namespace moex::kernels
