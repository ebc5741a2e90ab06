// The E2M1 / E4M3 / E8M0 conversions on their whole code spaces and their rounding ties.
#include "quant/fp_codes.h"

#include <gtest/gtest.h>

#include <cmath>

namespace moex::quant {
namespace {

TEST(FpCodes, E4m3DecodeThenEncodeIsIdentityOnEveryFiniteCode) {
  for (int c = 0; c < 256; ++c) {
    const float v = e4m3_to_f32(uint8_t(c));
    if ((c & 0x7F) == 0x7F) {
      EXPECT_TRUE(std::isnan(v)) << c;
      continue;
    }
    // -0 encodes back to 0x80; every other value to its own code.
    EXPECT_EQ(f32_to_e4m3(v), uint8_t(c)) << "code " << c << " value " << v;
  }
  EXPECT_EQ(e4m3_to_f32(0x7E), 448.0f);
  EXPECT_EQ(e4m3_to_f32(0x01), std::ldexp(1.0f, -9));
}

TEST(FpCodes, E4m3RoundsTiesToEvenAndSaturates) {
  // Between 1 (code 0x38) and 1.125 (0x39) the tie goes to the even mantissa, 1.
  EXPECT_EQ(f32_to_e4m3(1.0625f), 0x38);
  EXPECT_EQ(f32_to_e4m3(1.1875f), 0x3A);  // tie between 1.125 and 1.25: even is 1.25
  EXPECT_EQ(f32_to_e4m3(std::ldexp(1.0f, -10)), 0x00);  // half the smallest subnormal
  EXPECT_EQ(f32_to_e4m3(std::ldexp(3.0f, -10)), 0x02);  // 1.5 units of 2^-9: even is 2
  EXPECT_EQ(f32_to_e4m3(std::ldexp(3.0f, -11)), 0x01);  // 0.75 units
  EXPECT_EQ(f32_to_e4m3(0.015625f * 0.9375f), 0x08);    // rounds up into the normals
  EXPECT_EQ(f32_to_e4m3(1e9f), 0x7E);
  EXPECT_EQ(f32_to_e4m3(-INFINITY), 0xFE);
  EXPECT_EQ(f32_to_e4m3(NAN), 0x7E);
}

TEST(FpCodes, NearestE2m1TakesTheFirstEntryOnTies) {
  EXPECT_EQ(nearest_e2m1(0.25f), 0);    // 0 vs 0.5: code 0
  EXPECT_EQ(nearest_e2m1(-0.25f), 0);   // +0, -0 and -0.5 tie: the first, +0
  EXPECT_EQ(nearest_e2m1(0.75f), 1);    // 0.5 vs 1: 0.5
  EXPECT_EQ(nearest_e2m1(-2.5f), 12);   // -2 vs -3: -2
  EXPECT_EQ(nearest_e2m1(5.0f), 6);     // 4 vs 6: 4
  EXPECT_EQ(nearest_e2m1(100.0f), 7);   // beyond the range: 6
  EXPECT_EQ(nearest_e2m1(-0.26f), 9);
  EXPECT_EQ(nearest_e2m1(NAN), 0);
  for (int c = 0; c < 16; ++c) {
    if (c != 8) {
      EXPECT_EQ(nearest_e2m1(kE2m1Values[c]), c);
    }
  }
}

TEST(FpCodes, CeilLog2IsExactAtAndAroundPowersOfTwo) {
  EXPECT_EQ(ceil_log2(1.0f), 0);
  EXPECT_EQ(ceil_log2(std::nextafter(1.0f, 2.0f)), 1);
  EXPECT_EQ(ceil_log2(std::nextafter(1024.0f, 0.0f)), 10);
  EXPECT_EQ(ceil_log2(std::ldexp(1.0f, -149)), -149);
  EXPECT_EQ(ceil_log2(std::ldexp(3.0f, -149)), -147);
  EXPECT_EQ(e8m0_to_f32(127), 1.0f);
  EXPECT_EQ(e8m0_to_f32(0), std::ldexp(1.0f, -127));
  EXPECT_TRUE(std::isinf(e8m0_to_f32(255)));
}

}  // namespace
}  // namespace moex::quant
