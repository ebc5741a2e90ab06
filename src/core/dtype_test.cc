// dtype conversions: bf16/f16 rounding pinned at known values, round trips exhaustive.
#include "core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>

namespace moex {
namespace {

TEST(DType, NamesRoundTrip) {
  for (int i = 0; i <= static_cast<int>(DType::F8_E5M2); ++i) {
    auto t = static_cast<DType>(i);
    ASSERT_EQ(dtype_from_name(dtype_name(t)), t);
  }
  EXPECT_FALSE(dtype_from_name("F128").has_value());
  EXPECT_EQ(dtype_size(DType::BF16), 2u);
  EXPECT_EQ(dtype_size(DType::U32), 4u);
}

TEST(DType, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1.0078125: ties to even (1.0).
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1.0078125 + 2^-8 is halfway between 0x3f81 and 0x3f82: ties to even (0x3f82).
  EXPECT_EQ(f32_to_bf16(1.0078125f + std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
}

TEST(DType, F16ExhaustiveRoundTrip) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = f16_to_f32(uint16_t(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), h) << std::hex << h;
  }
}

TEST(DType, F16RoundingAndOverflow) {
  EXPECT_EQ(f32_to_f16(65504.f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.f), 0x7c00);  // halfway to the next step rounds to inf
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie -> even
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // half of smallest subnormal -> 0 (even)
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
}

// A safetensors data area may start at any byte: loads and stores at odd addresses must work
// (and be defined behaviour: the UBSan build of this test flagged the old pointer casts).
TEST(DType, LoadAndStoreAtOddAddresses) {
  alignas(8) unsigned char buf[64] = {};
  const float values[] = {1.5f, -0.25f, 3.0f};
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    for (size_t offset = 1; offset < 8; offset += 2) {
      void* p = buf + offset;
      for (size_t i = 0; i < 3; ++i) store_from_f32(p, t, i, values[i]);
      for (size_t i = 0; i < 3; ++i)
        EXPECT_EQ(load_as_f32(p, t, i), values[i]) << dtype_name(t) << " offset " << offset;
    }
  }
}

}  // namespace
}  // namespace moex
