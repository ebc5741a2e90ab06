// quant::dequantize: MLX's rounding (product rounded before the bias, in the scales' dtype),
// output dtype casts, row helpers against the whole-matrix path, view validation.
#include "quant/dequantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/error.h"
#include "quant/quantize.h"

namespace moex::quant {
namespace {

// Values pinned with mx.dequantize (mlx 0.32.4): 8-bit q = 3, bias -3, scale 1 + 1 ulp.
TEST(Dequantize, ProductIsRoundedBeforeBiasInScalesDtype) {
  // F32: 3 * (1 + 2^-23) rounds to 3 + 2^-21 (tie to even); a fused multiply-add would
  // give 3 * 2^-23 instead.
  EXPECT_EQ(dequantize_value(3, 1.f + std::ldexp(1.f, -23), -3.f, DType::F32), std::ldexp(1.f, -21));
  // BF16: 3 * (1 + 2^-7) = 3 + 1.5 ulp -> 3 + 2^-5; minus 3 -> 0.03125 (f32 math: 0.0234375).
  EXPECT_EQ(dequantize_value(3, 1.f + std::ldexp(1.f, -7), -3.f, DType::BF16), 0.03125f);
  // F16: 3 * (1 + 2^-10) -> 3 + 2^-8; minus 3 -> 2^-8.
  EXPECT_EQ(dequantize_value(3, 1.f + std::ldexp(1.f, -10), -3.f, DType::F16), std::ldexp(1.f, -8));
  // F16 overflow is MLX's too: 255 * 65504 is inf in f16.
  EXPECT_TRUE(std::isinf(dequantize_value(255, 65504.f, 0.f, DType::F16)));
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// A group spanning more than the f32 range gets scale -inf, bias 0, q 0, so MLX's
// dequantize yields 0 * -inf = NaN; its NaN encodings are MLX's (bf16 0x7FC0, f16 0x7D00
// with the sign kept, widened with the quiet bit).
TEST(Dequantize, OverflowedScaleGivesMlxNaNEncodings) {
  std::vector<float> x(32, 1.f);
  x[0] = 3e38f;
  x[1] = -3e38f;
  QuantizeArgs a{x.data(), DType::F32, 1, 32, 4, 32};
  const auto m = quantize(a);
  EXPECT_TRUE(std::isinf(m.scale(0, 0)));
  EXPECT_EQ(m.bias(0, 0), 0.f);
  EXPECT_EQ(m.packed, std::vector<uint32_t>(4, 0u));
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(bits_of(dequantize_value(0, -inf, 0.f, DType::BF16)), 0x7fc00000u);
  EXPECT_EQ(bits_of(dequantize_value(0, -inf, 0.f, DType::F16)) & 0x7fffffffu, 0x7fe00000u);
  EXPECT_TRUE(std::isnan(dequantize_value(0, -inf, 0.f, DType::F32)));
  std::vector<uint16_t> out(32);
  dequantize(m.view(), out.data(), DType::BF16);
  EXPECT_EQ(out[5], 0x7fc0);
  dequantize(m.view(), out.data(), DType::F16);
  EXPECT_EQ(out[5] & 0x7fff, 0x7d00);
}

QuantizedMatrix sample(DType dt, int bits, int gs, int64_t rows, int64_t k) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd;
  std::vector<uint8_t> buf(size_t(rows * k) * dtype_size(dt));
  for (int64_t i = 0; i < rows * k; ++i) store_from_f32(buf.data(), dt, size_t(i), nd(rng));
  QuantizeArgs a{buf.data(), dt, rows, k, bits, gs};
  return quantize(a);
}

TEST(Dequantize, OutputDtypesAreCastsOfTheScalesDtypeResult) {
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    const auto m = sample(dt, 4, 32, 3, 128);
    const auto f = dequantize_f32(m.view());
    for (DType out : {DType::F32, DType::F16, DType::BF16}) {
      std::vector<uint8_t> o(f.size() * dtype_size(out));
      dequantize(m.view(), o.data(), out);
      for (size_t i = 0; i < f.size(); ++i) {
        std::vector<uint8_t> one(dtype_size(out));
        store_from_f32(one.data(), out, 0, f[i]);
        ASSERT_EQ(0, std::memcmp(one.data(), o.data() + i * one.size(), one.size()));
        if (out == dt) {  // same dtype: the f32 result is exactly representable
          ASSERT_EQ(load_as_f32(o.data(), out, i), f[i]);
        }
      }
    }
  }
}

TEST(Dequantize, RowHelperMatchesMatrixAndFormula) {
  for (int bits : {2, 3, 4, 5, 6, 8}) {
    const auto m = sample(DType::BF16, bits, 64, 4, 192);
    const auto v = m.view();
    const auto all = dequantize_f32(v);
    std::vector<float> row(size_t(v.k));
    for (int64_t r = 0; r < v.rows; ++r) {
      dequantize_row(v, r, row.data());
      for (int64_t i = 0; i < v.k; ++i) {
        ASSERT_EQ(row[size_t(i)], all[size_t(r * v.k + i)]);
        const float expect = dequantize_value(extract_q(v.row(r), i, bits), m.scale(r, i / 64),
                                              m.bias(r, i / 64), DType::BF16);
        ASSERT_EQ(row[size_t(i)], expect);
      }
    }
  }
}

TEST(Dequantize, InvalidViewRejected) {
  const auto m = sample(DType::F32, 4, 64, 2, 128);
  auto v = m.view();
  v.bits = 7;
  EXPECT_THROW(dequantize_f32(v), Error);
  v = m.view();
  v.group_size = 100;
  EXPECT_THROW(dequantize_f32(v), Error);
  v = m.view();
  v.k = 96;
  try {
    dequantize_f32(v);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("k=96"), std::string::npos) << e.what();
  }
  v = m.view();
  v.sb_dtype = DType::U8;
  EXPECT_THROW(dequantize_f32(v), Error);
  v = m.view();
  v.biases = nullptr;
  EXPECT_THROW(dequantize_f32(v), Error);
  std::vector<float> out(256);
  EXPECT_THROW(dequantize(m.view(), out.data(), DType::I32), Error);
}

}  // namespace
}  // namespace moex::quant
