// Repacked ggml rows dequantized by moex (quant::dequantize_f32) against ggml's scalar
// dequantization (gguf::dequantize), bit for bit, on random blocks: fully random bytes (NaN,
// infinite, subnormal and zero scales) and blocks with ordinary finite scales of both signs.
#include "io/gguf/ggml_repack.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "io/gguf/ggml_dequantize.h"
#include "quant/dequantize.h"

namespace moex::gguf {
namespace {

struct TypeCase {
  GgmlType type;
  std::vector<int> f16_scales;  // byte offsets of the block's f16 scales (d, dmin or m)
};

const std::vector<TypeCase>& cases() {
  static const std::vector<TypeCase> kCases = {
      {GgmlType::kF32, {}},           {GgmlType::kF16, {}},
      {GgmlType::kBF16, {}},          {GgmlType::kQ4_0, {0}},
      {GgmlType::kQ4_1, {0, 2}},      {GgmlType::kQ5_0, {0}},
      {GgmlType::kQ5_1, {0, 2}},      {GgmlType::kQ8_0, {0}},
      {GgmlType::kIQ4_NL, {0}},       {GgmlType::kQ2_K, {80, 82}},
      {GgmlType::kQ3_K, {108}},       {GgmlType::kQ4_K, {0, 2}},
      {GgmlType::kQ5_K, {0, 2}},      {GgmlType::kQ6_K, {208}},
      {GgmlType::kIQ4_XS, {0}},       {GgmlType::kMXFP4, {}},
  };
  return kCases;
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// rows x k elements of c.type: even blocks fully random bytes (every 8th with all scales NaN,
// so two NaNs of different payloads meet in Q4_1's and the K types' last addition), odd
// blocks with finite scales ~ N(0, 0.02) or +-0 (both signs, so ggml's -0.0 occurs). MXFP4's
// exponent 255 becomes 254: such blocks are refused (tested below); every other scale, infinite
// ones included, is kept.
std::vector<uint8_t> random_rows(const TypeCase& c, int64_t rows, int64_t k, uint64_t seed) {
  const GgmlTypeInfo& info = ggml_info(c.type);
  const int64_t blocks = rows * k / info.block_elems;
  std::vector<uint8_t> data(size_t(blocks * info.block_bytes));
  std::mt19937_64 rng(seed);
  for (auto& b : data) b = uint8_t(rng());
  std::normal_distribution<float> scale(0.0f, 0.02f);
  for (int64_t bl = 0; bl < blocks; ++bl) {
    uint8_t* b = data.data() + bl * info.block_bytes;
    if (bl % 2 == 1) {
      for (int off : c.f16_scales) {  // every 8th block +-0 scales
        const uint16_t h = bl % 8 == 3 ? uint16_t(rng() & 0x8000) : f32_to_f16(scale(rng));
        b[off] = uint8_t(h);
        b[off + 1] = uint8_t(h >> 8);
      }
      if (c.type == GgmlType::kMXFP4) b[0] = uint8_t(110 + rng() % 20);
    } else if (bl % 8 == 4) {  // every scale NaN, with its own sign and payload
      for (int off : c.f16_scales) {
        const uint16_t h = uint16_t(0x7c01 | (rng() & 0x83ff));
        b[off] = uint8_t(h);
        b[off + 1] = uint8_t(h >> 8);
      }
    }
    if (c.type == GgmlType::kMXFP4 && b[0] == 255) b[0] = 254;
  }
  return data;
}

TEST(GgmlRepack, DequantizesToGgmlsBitsForEveryType) {
  const int64_t rows = 256, k = 512;
  for (const TypeCase& c : cases()) {
    SCOPED_TRACE(ggml_type_name(c.type));
    const std::vector<uint8_t> src = random_rows(c, rows, k, 1234 + uint64_t(c.type));
    std::vector<float> want(size_t(rows * k));
    dequantize(c.type, src.data(), src.size(), want.data(), rows * k);
    const quant::QuantizedMatrix m = repack(c.type, src.data(), src.size(), rows, k, "t");
    EXPECT_EQ(m.view().format(), *repack_format(c.type));
    const std::vector<float> got = quant::dequantize_f32(m.view());
    ASSERT_EQ(got.size(), want.size());
    int64_t differ = 0, neg_zero = 0, nan = 0, first = -1;
    for (size_t i = 0; i < got.size(); ++i) {
      const uint32_t g = bits_of(got[i]), w = bits_of(want[i]);
      neg_zero += w == 0x80000000u;
      nan += std::isnan(want[i]);
      if (g != w && differ++ == 0) first = int64_t(i);
    }
    EXPECT_EQ(differ, 0) << "first at " << first << ": moex " << got[size_t(first)] << " (0x"
                         << std::hex << bits_of(got[size_t(first)]) << ") ggml "
                         << want[size_t(first)] << " (0x" << bits_of(want[size_t(first)]) << ")";
    // The data reaches the edge cases: -0.0 for every block type but MXFP4 (whose zero code
    // is +0 in ggml), NaN wherever scales or elements come from random bytes.
    if (ggml_info(c.type).block_elems > 1 && c.type != GgmlType::kMXFP4) {
      EXPECT_GT(neg_zero, 0);
    }
    if (c.type != GgmlType::kMXFP4) {
      EXPECT_GT(nan, 0);
    }
  }
}

// ggml's -0.0 of a zero point is kept: Q4_0 with d = -1 and code 8 (d * (8 - 8)), and IQ4_XS with
// d = -0 and a negative code book value ((-0 * -32) * -127), which the affine repack of IQ4_XS
// used to turn into +0.0 (an exact cancellation of scale * q + bias).
TEST(GgmlRepack, ZeroPointTypesKeepNegativeZero) {
  std::vector<uint8_t> xs(136, 0);  // IQ4_XS, d = -0.0, sub-scales 0 - 32, every code 0 (-127)
  xs[1] = 0x80;
  float want_xs[256];
  dequantize(GgmlType::kIQ4_XS, xs.data(), xs.size(), want_xs, 256);
  std::vector<float> got =
      quant::dequantize_f32(repack(GgmlType::kIQ4_XS, xs.data(), 136, 1, 256, "t").view());
  EXPECT_EQ(bits_of(want_xs[0]), 0x80000000u);
  EXPECT_EQ(bits_of(got[0]), 0x80000000u);
  std::vector<uint8_t> b(18, 0x88);
  float want[32];
  b[0] = 0x00;
  b[1] = 0xbc;  // Q4_0, every code 8, d = -1.0
  dequantize(GgmlType::kQ4_0, b.data(), b.size(), want, 32);
  got = quant::dequantize_f32(repack(GgmlType::kQ4_0, b.data(), 18, 1, 32, "t").view());
  EXPECT_EQ(bits_of(want[0]), 0x80000000u);
  EXPECT_EQ(bits_of(got[0]), 0x80000000u);
}

template <typename Fn>
std::string repack_error(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(GgmlRepack, RefusesRowsThatAreNotWholeBlocks) {
  std::vector<uint8_t> src(144 * 2);
  const std::string e = repack_error([&] { repack(GgmlType::kQ4_K, src.data(), src.size(), 2, 128, "blk.0.w"); });
  EXPECT_NE(e.find("blk.0.w"), std::string::npos) << e;
  EXPECT_NE(e.find("Q4_K's 256-element blocks"), std::string::npos) << e;
  EXPECT_NE(repack_error([&] { repack(GgmlType::kQ4_0, src.data(), src.size(), 1, 0, "t"); })
                .find("not a positive whole number"),
            std::string::npos);
  const std::string sz = repack_error([&] { repack(GgmlType::kQ4_K, src.data(), src.size() - 1, 2, 256, "t"); });
  EXPECT_NE(sz.find("take 288 bytes but 287 were given"), std::string::npos) << sz;
}

TEST(GgmlRepack, RefusesTypesWithoutALosslessForm) {
  std::vector<uint8_t> src(210);
  for (GgmlType t : {GgmlType::kQ8_1, GgmlType::kIQ2_XS}) {
    EXPECT_FALSE(repack_format(t).has_value());
    const std::string e = repack_error([&] { repack(t, src.data(), src.size(), 1, 256, "w"); });
    EXPECT_NE(e.find(std::string("ggml type ") + ggml_type_name(t) + " cannot be repacked"),
              std::string::npos) << e;
  }
  EXPECT_NE(std::string(repack_unsupported_reason(GgmlType::kQ8_1)).find("no dequantization"),
            std::string::npos);
}

TEST(GgmlRepack, RefusesScalesMoexCannotReproduce) {
  std::string e;
  // The ggml block modes compute ggml's own d * (q - z): an infinite d is kept, inf and NaN
  // as ggml gives them.
  std::vector<uint8_t> q8(34 * 3, 0);  // Q8_0, block 2 with d = -inf, codes 0 and 1
  q8[2 * 34 + 1] = 0xfc;
  q8[2 * 34 + 3] = 1;
  float want[96];
  dequantize(GgmlType::kQ8_0, q8.data(), q8.size(), want, 96);
  const std::vector<float> got = quant::dequantize_f32(repack(GgmlType::kQ8_0, q8.data(), q8.size(), 1, 96, "x").view());
  EXPECT_TRUE(std::isnan(want[64]) && std::isinf(want[65]));
  EXPECT_EQ(bits_of(got[64]), bits_of(want[64]));
  EXPECT_EQ(bits_of(got[65]), bits_of(want[65]));
  std::vector<uint8_t> fp4(17 * 2, 0);  // MXFP4, row 1 with the exponent byte 255
  fp4[17] = 255;
  e = repack_error([&] { repack(GgmlType::kMXFP4, fp4.data(), fp4.size(), 2, 32, "y"); });
  EXPECT_NE(e.find("y: MXFP4 row 1 block 0 has the exponent byte 255"), std::string::npos) << e;
}

}  // namespace
}  // namespace moex::gguf
