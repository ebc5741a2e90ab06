// quant::check_quant_shape: validation against config bits/group_size, the inference rules
// (partial config, logical k, MLX defaults, unique pair, ambiguity) and rejected packings.
#include "quant/shape_check.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace moex::quant {
namespace {

QuantShapeArgs args(std::vector<int64_t> w, std::vector<int64_t> s) {
  QuantShapeArgs a;
  a.tensor = "model.layers.3.mlp.switch_mlp.up_proj";
  a.weight_shape = std::move(w);
  a.scales_shape = s;
  a.biases_shape = std::move(s);
  return a;
}

void expect_error(const QuantShapeArgs& a, const std::string& needle) {
  try {
    check_quant_shape(a);
    ADD_FAILURE() << "accepted; expected an error with \"" << needle << "\"";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(a.tensor), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
}

TEST(QuantShape, ConfigValuesValidated) {
  // Qwen3-30B-A3B up_proj at 4 bits / 64: [128 experts][768][2048 / 8 words], 32 groups.
  auto a = args({128, 768, 256}, {128, 768, 32});
  a.bits = 4;
  a.group_size = 64;
  const auto s = check_quant_shape(a);
  EXPECT_EQ(s.k, 2048);
  EXPECT_EQ(s.rows, 128 * 768);
  EXPECT_EQ(s.leading, (std::vector<int64_t>{128, 768}));
  EXPECT_FALSE(s.inferred);
  a.bits = 8;  // 256 words * 32 / 8 = 1024 != 32 * 64
  expect_error(a, "do not match bits=8");
}

TEST(QuantShape, EveryValidPairRoundTrips) {
  for (int b : {2, 3, 4, 5, 6, 8})
    for (int g : {32, 64, 128}) {
      const int64_t k = 768;
      auto a = args({10, k * b / 32}, {10, k / g});
      a.k = k;  // mlx-lm's rule
      auto s = check_quant_shape(a);
      EXPECT_EQ(s.bits, b);
      EXPECT_EQ(s.group_size, g);
      EXPECT_TRUE(s.inferred);
      a.k.reset();
      a.bits = b;  // bits only: group size follows
      s = check_quant_shape(a);
      EXPECT_EQ(s.group_size, g);
      a.bits.reset();
      a.group_size = g;  // group size only: bits follow
      s = check_quant_shape(a);
      EXPECT_EQ(s.bits, b);
    }
}

TEST(QuantShape, SilentConfigUsesMlxDefaultsThenUniquePair) {
  // words*32/groups = 256 fits 8/32, 4/64 and 2/128: MLX's defaults (4, 64) win.
  auto s = check_quant_shape(args({4, 32}, {4, 4}));
  EXPECT_EQ(s.bits, 4);
  EXPECT_EQ(s.group_size, 64);
  // 160 = 5 * 32 only.
  s = check_quant_shape(args({4, 40}, {4, 8}));
  EXPECT_EQ(s.bits, 5);
  EXPECT_EQ(s.group_size, 32);
  // 768 = 6 * 128 only.
  s = check_quant_shape(args({4, 48}, {4, 2}));
  EXPECT_EQ(s.bits, 6);
  EXPECT_EQ(s.group_size, 128);
  // 128 = 4 * 32 = 2 * 64: ambiguous without config or k.
  expect_error(args({4, 16}, {4, 4}), "ambiguous");
}

TEST(QuantShape, BadPackingsRejected) {
  expect_error(args({4, 33}, {4, 4}), "fit no bits");           // 264 = no pair
  auto a = args({4, 32}, {4, 4});
  a.bits = 3;  // 32*32 not a multiple of 3
  expect_error(a, "bits=3");
  a = args({4, 32}, {4, 4});
  a.group_size = 32;  // k = 128 -> bits 8: fine; with k=100 it is not
  EXPECT_EQ(check_quant_shape(a).bits, 8);
  a.k = 256;
  expect_error(a, "model expects k=256");
  a = args({4, 32}, {4, 4});
  a.k = 100;
  expect_error(a, "k=100");
  a = args({4, 32}, {4, 4});
  a.k = 1024;  // bits = 1
  expect_error(a, "imply bits");
  a = args({4, 32}, {4, 3});
  a.bits = 4;  // k = 256 not divisible into 3 groups
  expect_error(a, "bits=4");
  a = args({4, 32}, {4, 16});
  a.bits = 4;  // group size 16
  expect_error(a, "group_size=16");
}

TEST(QuantShape, MetadataAndShapeMismatchesRejected) {
  auto a = args({4, 32}, {4, 4});
  a.bits = 7;
  expect_error(a, "bits=7");
  a = args({4, 32}, {4, 4});
  a.group_size = 256;
  expect_error(a, "group_size=256");
  a = args({4, 32}, {4, 4});
  a.mode = "mxfp4";
  expect_error(a, "mxfp4");
  a = args({4, 32}, {4, 4});
  a.biases_shape = {4, 2};
  expect_error(a, ".biases");
  a = args({4, 32}, {4, 4});
  a.biases_shape.clear();
  expect_error(a, "missing");
  expect_error(args({4, 32}, {5, 4}), "differ outside the last dimension");
  expect_error(args({2, 4, 32}, {4, 4}), "differ outside the last dimension");
  expect_error(args({32}, {4}), "rank 1");
  expect_error(args({4, 0}, {4, 4}), "dimension outside");
  expect_error(args({-4, 32}, {-4, 4}), "dimension outside");
  a = args({4, 32}, {4, 4});
  a.weight_dtype = DType::I32;
  expect_error(a, "expected U32");
  a = args({4, 32}, {4, 4});
  a.scales_dtype = DType::U8;
  expect_error(a, ".scales: dtype U8");
  a = args({4, 32}, {4, 4});
  a.scales_dtype = DType::BF16;
  a.biases_dtype = DType::F16;
  expect_error(a, ".biases: dtype F16");
  a = args({1 << 20, 1 << 20, 1 << 20, 32}, {1 << 20, 1 << 20, 1 << 20, 4});
  expect_error(a, "too large");
}

// The fp modes: U8 scale codes, no biases, the mode's own bits and group size.
TEST(QuantShape, FpModesHaveTheirOwnLayout) {
  for (const char* mode : {"mxfp4", "mxfp8", "nvfp4"}) {
    SCOPED_TRACE(mode);
    const int bits = std::string(mode) == "mxfp8" ? 8 : 4;
    const int gs = std::string(mode) == "nvfp4" ? 16 : 32;
    QuantShapeArgs a = args({8, 96, 2048 * bits / 32}, {8, 96, 2048 / gs});
    a.biases_shape.clear();
    a.mode = mode;
    a.weight_dtype = DType::U32;
    a.scales_dtype = DType::U8;
    a.k = 2048;
    const QuantShape s = check_quant_shape(a);
    EXPECT_EQ(s.mode, *mode_from_name(mode));
    EXPECT_EQ(s.bits, bits);
    EXPECT_EQ(s.group_size, gs);
    EXPECT_EQ(s.k, 2048);

    QuantShapeArgs b = a;
    b.biases_shape = b.scales_shape;
    expect_error(b, "has no biases");
    b = a;
    b.scales_dtype = DType::BF16;
    expect_error(b, "expected U8");
    b = a;
    b.bits = bits == 4 ? 8 : 4;
    expect_error(b, "does not fit mode");
    b = a;
    b.group_size = 64;
    expect_error(b, "does not fit mode");
    b = a;
    b.scales_shape.back() += 1;  // a truncated or hostile scales tensor
    expect_error(b, "do not match");
    b = a;
    b.k = 1024;
    expect_error(b, "expects k=1024");
  }
  QuantShapeArgs a = args({8, 96, 256}, {8, 96, 64});
  a.mode = "fp4";
  expect_error(a, "expected affine, mxfp4, mxfp8 or nvfp4");
}

// mlx-lm's infer_quant_config: every valid affine pair and every fp mode is recovered from its
// packed shapes; shapes that imply no whole or supported format give nullopt (the config's
// setting then decides and reports).
TEST(QuantShape, PackedFormatInference) {
  const int64_t k = 768;
  for (int b : {2, 3, 4, 5, 6, 8})
    for (int g : {32, 64, 128}) {
      SCOPED_TRACE(std::to_string(b) + " bits / group " + std::to_string(g));
      const auto f = infer_packed_format({8, 96, k * b / 32}, {8, 96, k / g}, DType::BF16, k);
      ASSERT_TRUE(f.has_value());
      EXPECT_EQ(*f, Format::affine(b, g, DType::BF16));
    }
  for (Mode m : {Mode::kMxfp4, Mode::kMxfp8, Mode::kNvfp4}) {
    const Format want = Format::fp(m);
    const auto f = infer_packed_format({96, k * want.bits / 32}, {96, k / want.group_size},
                                       DType::U8, k);
    ASSERT_TRUE(f.has_value()) << mode_name(m);
    EXPECT_EQ(*f, want);
  }
  // U8 scales with a pair no fp mode has (4 bits / 64), unsupported widths and groups,
  // fractional ratios, empty and zero shapes.
  EXPECT_FALSE(infer_packed_format({96, 96}, {96, 12}, DType::U8, k));
  EXPECT_FALSE(infer_packed_format({96, k * 7 / 32}, {96, 12}, DType::BF16, k));    // 7 bits
  EXPECT_FALSE(infer_packed_format({96, 96}, {96, 48}, DType::BF16, k));            // group 16
  EXPECT_FALSE(infer_packed_format({96, 97}, {96, 12}, DType::BF16, k));            // 97*32/768
  EXPECT_FALSE(infer_packed_format({96, 96}, {96, 7}, DType::BF16, k));             // 768/7
  EXPECT_FALSE(infer_packed_format({96, 96}, {96, 0}, DType::BF16, k));
  EXPECT_FALSE(infer_packed_format({}, {96, 12}, DType::BF16, k));
  EXPECT_FALSE(infer_packed_format({96, 96}, {96, 12}, DType::BF16, 0));
  EXPECT_FALSE(infer_packed_format({96, 96}, {96, 12}, DType::I32, k));            // scale dtype
}

}  // namespace
}  // namespace moex::quant
