// quant::quantize: packed words pinned per width, edge-anchored scale/bias on constant,
// zero, all-negative and mixed-sign groups, the round-trip error bound, bad parameters.
#include "quant/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "quant/dequantize.h"

namespace moex::quant {
namespace {

QuantizedMatrix quantize_f32(const std::vector<float>& x, int64_t rows, int bits, int gs) {
  QuantizeArgs a;
  a.data = x.data();
  a.dtype = DType::F32;
  a.rows = rows;
  a.k = int64_t(x.size()) / rows;
  a.bits = bits;
  a.group_size = gs;
  return quantize(a);
}

// Input whose quantized values are exactly Q: a group with min 0 and max 2^bits-1 gets
// scale -1 and bias 2^bits-1 (|max| >= |min| picks the max edge), so q = (2^bits-1) - x.
std::vector<float> input_for_q(const std::vector<uint32_t>& q, int bits) {
  std::vector<float> x;
  for (uint32_t v : q) x.push_back(float(((1u << bits) - 1) - v));
  return x;
}

struct PinnedCase {
  int bits, gs;
  std::vector<uint32_t> q;
  std::vector<uint32_t> words;
};

std::vector<uint32_t> iota_mod(int n, uint32_t mod) {
  std::vector<uint32_t> v;
  for (int i = 0; i < n; ++i) v.push_back(uint32_t(i) % mod);
  return v;
}

TEST(Quantize, PinnedPackedWordsEveryWidth) {
  std::vector<uint32_t> q8 = iota_mod(31, 256);
  q8.push_back(255);
  // Hand-packed LSB-first streams (2/4/8: per-nibble/byte patterns; 3 bits: 0..7 packs to
  // the bytes 88 C6 FA; 5/6 bits: 0..31 / 0..63 as one stream), cross-checked with mlx 0.32.4.
  const PinnedCase cases[] = {
      {2, 32, iota_mod(32, 4), {0xe4e4e4e4, 0xe4e4e4e4}},
      {3, 32, iota_mod(32, 8), {0x88fac688, 0xc688fac6, 0xfac688fa}},
      {4, 32, iota_mod(32, 16), {0x76543210, 0xfedcba98, 0x76543210, 0xfedcba98}},
      {5, 32, iota_mod(32, 32), {0x8a418820, 0xc5a92839, 0xca307b9a, 0x38bdab49, 0xffbbcdeb}},
      {6, 64, iota_mod(64, 64),
       {0x440c2040, 0xa2481c61, 0x3ce34c2c, 0x544d2450, 0xa6585d65, 0x7de75c6d, 0x648e2860,
        0xaa689e69, 0xbeeb6cae, 0x74cf2c70, 0xae78df6d, 0xffef7cef}},
      {8, 32, q8,
       {0x03020100, 0x07060504, 0x0b0a0908, 0x0f0e0d0c, 0x13121110, 0x17161514, 0x1b1a1918,
        0xff1e1d1c}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.bits);
    const auto m = quantize_f32(input_for_q(c.q, c.bits), 1, c.bits, c.gs);
    EXPECT_EQ(m.packed, c.words);
    EXPECT_EQ(m.scale(0, 0), -1.0f);
    EXPECT_EQ(m.bias(0, 0), float((1 << c.bits) - 1));
    const auto* bytes = reinterpret_cast<const uint8_t*>(m.packed.data());
    for (size_t i = 0; i < c.q.size(); ++i) ASSERT_EQ(extract_q(bytes, int64_t(i), c.bits), c.q[i]);
  }
}

TEST(Quantize, ConstantGroupIsExactWithZeroCodes) {
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    for (float c : {0.7f, -3.25f, 1e-3f, 5.0f}) {
      std::vector<uint16_t> buf(64);
      std::vector<float> xf(64);
      for (int i = 0; i < 64; ++i) store_from_f32(dt == DType::F32 ? (void*)xf.data() : buf.data(), dt, i, c);
      QuantizeArgs a;
      a.data = dt == DType::F32 ? (const void*)xf.data() : buf.data();
      a.dtype = dt;
      a.rows = 1;
      a.k = 64;
      a.bits = 4;
      a.group_size = 64;
      const auto m = quantize(a);
      const float cd = load_as_f32(a.data, dt, 0);  // c rounded to the dtype
      EXPECT_EQ(m.bias(0, 0), cd);
      EXPECT_LT(m.scale(0, 0), 0.f);  // |max| >= |min|: the max edge, negated scale
      for (uint32_t w : m.packed) EXPECT_EQ(w, 0u);
      const auto d = dequantize_f32(m.view());
      for (float v : d) EXPECT_EQ(v, cd);
    }
  }
}

TEST(Quantize, ZerosGiveZeroBiasAndEpsScale) {
  const auto m = quantize_f32(std::vector<float>(128, 0.f), 1, 4, 128);
  EXPECT_EQ(m.bias(0, 0), 0.f);
  EXPECT_EQ(m.scale(0, 0), -static_cast<float>(1e-7));  // eps clamp, negated (max edge)
  for (uint32_t w : m.packed) EXPECT_EQ(w, 0u);
  for (float v : dequantize_f32(m.view())) EXPECT_EQ(v, 0.f);
}

TEST(Quantize, AllNegativeGroupAnchorsAtMinWithPositiveScale) {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = -1.0f - 0.25f * float(i);  // min -8.75, max -1
  const auto m = quantize_f32(x, 1, 4, 32);
  EXPECT_GT(m.scale(0, 0), 0.f);
  EXPECT_EQ(m.bias(0, 0), -8.75f);  // the larger-magnitude edge is the bias, exact
  const auto* bytes = reinterpret_cast<const uint8_t*>(m.packed.data());
  EXPECT_EQ(extract_q(bytes, 31, 4), 0u);   // the min itself
  EXPECT_EQ(extract_q(bytes, 0, 4), 15u);   // the far edge
  EXPECT_EQ(dequantize_f32(m.view())[31], -8.75f);
}

TEST(Quantize, MixedSignScaleSignFollowsLargerEdge) {
  std::vector<float> x(64, 0.5f);
  x[3] = -10.f;  // |min| > |max|: positive scale, bias = -10
  x[40] = 12.f;  // second group: |max| > |min|: negative scale, bias = 12
  x[41] = -1.f;
  const auto m = quantize_f32(x, 1, 3, 32);
  EXPECT_GT(m.scale(0, 0), 0.f);
  EXPECT_EQ(m.bias(0, 0), -10.f);
  EXPECT_LT(m.scale(0, 1), 0.f);
  EXPECT_EQ(m.bias(0, 1), 12.f);
  // Zero is representable: scale = edge / q0, so code -q0 maps back to 0 (up to the f32
  // rounding of the scale).
  const float s1 = m.scale(0, 1), b1 = m.bias(0, 1);
  const float q0 = std::rint(b1 / s1);
  ASSERT_LE(q0, 0.f);
  EXPECT_LE(std::fabs(dequantize_value(uint32_t(-q0), s1, b1, DType::F32)),
            std::fabs(b1) * std::ldexp(1.f, -22));
}

TEST(Quantize, FarEdgeMayClampOneStep) {
  // 2 bits, edges -1 and 1: scale -2/3 becomes 1/q0 with q0 = rint(-1.5) = -2, so the grid
  // is {1, 0.5, 0, -0.5}: -1 clamps to -0.5, an error of one full step (mx.quantize agrees).
  std::vector<float> x(32, 0.f);
  x[0] = -1.f;
  x[1] = 1.f;
  const auto m = quantize_f32(x, 1, 2, 32);
  EXPECT_EQ(m.scale(0, 0), -0.5f);
  EXPECT_EQ(m.bias(0, 0), 1.f);
  EXPECT_EQ(m.packed[0], 0xaaaaaaa3u);
  EXPECT_EQ(dequantize_f32(m.view())[0], -0.5f);
}

TEST(Quantize, RoundTripErrorWithinHalfStep) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  const int64_t rows = 6, k = 256;
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    const double u = dt == DType::F32 ? std::ldexp(1.0, -24)
                     : dt == DType::F16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
    std::vector<uint8_t> buf(size_t(rows * k) * dtype_size(dt));
    for (int64_t i = 0; i < rows * k; ++i) store_from_f32(buf.data(), dt, size_t(i), nd(rng) * float(1 + i % 7));
    for (int bits : {2, 3, 4, 5, 6, 8}) {
      for (int gs : {32, 64, 128}) {
        SCOPED_TRACE(testing::Message() << dtype_name(dt) << " bits=" << bits << " gs=" << gs);
        QuantizeArgs a{buf.data(), dt, rows, k, bits, gs};
        const auto m = quantize(a);
        const auto d = dequantize_f32(m.view());
        const auto* bytes = reinterpret_cast<const uint8_t*>(m.packed.data());
        const double n_bins = double((1 << bits) - 1);
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t i = 0; i < k; ++i) {
            const double s = std::fabs(m.scale(r, i / gs)), b = m.bias(r, i / gs);
            const double x = load_as_f32(buf.data(), dt, size_t(r * k + i));
            const uint32_t q = extract_q(bytes + r * m.view().row_bytes(), i, bits);
            // Unclamped codes are the nearest grid point; a clamped far edge is off by at
            // most one step. Slack: the stored scale's rounding over n_bins steps, the
            // f32 quantizer's own rounding, and the dequantizer's two roundings.
            const double raw = (x - b) / m.scale(r, i / gs);
            const bool clamped = raw < -0.5 || raw > n_bins + 0.5;
            const double slack = n_bins * s * u + (std::fabs(x) + std::fabs(b) + n_bins * s) * 2 * u +
                                 s * 1e-5;
            const double step = clamped ? s : s / 2;
            ASSERT_LE(std::fabs(x - (b + double(q) * m.scale(r, i / gs))), step + slack) << i;
            ASSERT_LE(std::fabs(x - double(d[size_t(r * k + i)])), step + 2 * slack) << i;
          }
        }
      }
    }
  }
}

TEST(Quantize, IntoEqualsAllocatingAndIsThreadCountInvariant) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> ud(-4.f, 2.f);
  std::vector<float> x(64 * 128);
  for (float& v : x) v = ud(rng);
  const int saved = num_threads();
  set_num_threads(1);
  const auto one = quantize_f32(x, 64, 5, 64);
  set_num_threads(2);
  const auto two = quantize_f32(x, 64, 5, 64);
  set_num_threads(saved);
  EXPECT_EQ(one.packed, two.packed);
  EXPECT_EQ(one.scales, two.scales);
  std::vector<uint32_t> packed(one.packed.size());
  std::vector<float> s(64 * 2), b(64 * 2);
  quantize_into({x.data(), DType::F32, 64, 128, 5, 64}, packed.data(), s.data(), b.data());
  EXPECT_EQ(packed, one.packed);
  EXPECT_EQ(0, std::memcmp(s.data(), one.scales.data(), one.scales.size()));
  EXPECT_EQ(0, std::memcmp(b.data(), one.biases.data(), one.biases.size()));
}

void expect_error_naming(const QuantizeArgs& a, const std::string& word) {
  try {
    quantize(a);
    ADD_FAILURE() << "no error for " << word;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
  }
}

TEST(Quantize, InvalidParametersRejected) {
  std::vector<float> x(256, 1.f);
  const QuantizeArgs ok{x.data(), DType::F32, 2, 128, 4, 64};
  for (int bits : {0, 1, 7, 16}) {
    auto a = ok;
    a.bits = bits;
    expect_error_naming(a, "bits=");
  }
  for (int gs : {0, 16, 48, 256}) {
    auto a = ok;
    a.group_size = gs;
    expect_error_naming(a, "group_size=");
  }
  auto a = ok;
  a.k = 96;  // not a multiple of 64
  expect_error_naming(a, "k=96");
  a = ok;
  a.dtype = DType::I32;
  expect_error_naming(a, "dtype=");
  a = ok;
  a.rows = -1;
  expect_error_naming(a, "rows=");
  a = ok;
  a.data = nullptr;
  expect_error_naming(a, "data");
}

}  // namespace
}  // namespace moex::quant
