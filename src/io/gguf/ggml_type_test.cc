// The ggml type table: ids, names, block sizes and byte counts, and the byte-size arithmetic.
#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "io/gguf/ggml_dequantize.h"
#include "io/gguf/ggml_type.h"

namespace moex::gguf {
namespace {

TEST(GgmlType, TableRowsMatchTheirIds) {
  // Every id 0..63: either a row whose type is that id, or unknown.
  int known = 0;
  for (uint32_t id = 0; id < 64; ++id) {
    const auto info = ggml_type_info(id);
    if (!info) continue;
    ++known;
    EXPECT_EQ(uint32_t(info->type), id);
    EXPECT_STREQ(ggml_info(info->type).name, info->name);
    EXPECT_GT(info->block_elems, 0);
    EXPECT_GT(info->block_bytes, 0);
  }
  EXPECT_EQ(known, 32);
  for (uint32_t removed : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u}) EXPECT_FALSE(ggml_type_info(removed)) << removed;
}

TEST(GgmlType, SizesOfTheCommonTypes) {
  struct Row {
    GgmlType t;
    int elems, bytes;
  };
  // Bits per weight = 8 * bytes / elems: Q4_K 4.5, Q6_K 6.5625, Q8_0 8.5, MXFP4 4.25.
  for (const Row& r : std::vector<Row>{{GgmlType::kF32, 1, 4}, {GgmlType::kF16, 1, 2}, {GgmlType::kBF16, 1, 2},
                                       {GgmlType::kQ4_0, 32, 18}, {GgmlType::kQ4_1, 32, 20},
                                       {GgmlType::kQ5_0, 32, 22}, {GgmlType::kQ5_1, 32, 24},
                                       {GgmlType::kQ8_0, 32, 34}, {GgmlType::kQ2_K, 256, 84},
                                       {GgmlType::kQ3_K, 256, 110}, {GgmlType::kQ4_K, 256, 144},
                                       {GgmlType::kQ5_K, 256, 176}, {GgmlType::kQ6_K, 256, 210},
                                       {GgmlType::kMXFP4, 32, 17}, {GgmlType::kIQ4_NL, 32, 18},
                                       {GgmlType::kIQ4_XS, 256, 136}}) {
    EXPECT_EQ(ggml_info(r.t).block_elems, r.elems) << ggml_type_name(r.t);
    EXPECT_EQ(ggml_info(r.t).block_bytes, r.bytes) << ggml_type_name(r.t);
    EXPECT_TRUE(ggml_info(r.t).dequantizable) << ggml_type_name(r.t);
  }
}

TEST(GgmlType, ByteCounts) {
  EXPECT_EQ(ggml_nbytes(GgmlType::kQ4_K, 512, 512 * 3), 144u * 6);
  EXPECT_FALSE(ggml_nbytes(GgmlType::kQ4_K, 128, 128));  // not a whole block per row
  EXPECT_EQ(ggml_nbytes(GgmlType::kF32, 7, 0), 0u);
  EXPECT_FALSE(ggml_nbytes(GgmlType::kF64, 1, uint64_t(1) << 62));  // 2^65 bytes
}

TEST(GgmlDequantize, RefusesWhatItCannotDo) {
  std::vector<uint8_t> src(144);
  std::vector<float> dst(256);
  EXPECT_THROW(dequantize(GgmlType::kIQ2_XXS, src.data(), 66, dst.data(), 256), Error);
  EXPECT_THROW(dequantize(GgmlType::kQ4_K, src.data(), 144, dst.data(), 128), Error);
  EXPECT_THROW(dequantize(GgmlType::kQ4_K, src.data(), 143, dst.data(), 256), Error);
  EXPECT_NO_THROW(dequantize(GgmlType::kQ4_K, src.data(), 144, dst.data(), 256));
}

TEST(GgmlDequantize, HandWorkedBlocks) {
  // Q8_0: d = 0.5 (f16 0x3800), codes -128, 1, 127 -> -64, 0.5, 63.5.
  std::vector<uint8_t> q8(34, 0);
  q8[0] = 0x00, q8[1] = 0x38, q8[2] = 0x80, q8[3] = 1, q8[4] = 127;
  std::vector<float> y(32);
  dequantize(GgmlType::kQ8_0, q8.data(), q8.size(), y.data(), 32);
  EXPECT_EQ(y[0], -64.f);
  EXPECT_EQ(y[1], 0.5f);
  EXPECT_EQ(y[2], 63.5f);
  // Q4_0: d = 2 (0x4000), byte 0 = 0xf3: element 0 = 3 - 8 = -5 -> -10, element 16 = 15 - 8 -> 14.
  std::vector<uint8_t> q4(18, 0x88);
  q4[0] = 0x00, q4[1] = 0x40, q4[2] = 0xf3;
  dequantize(GgmlType::kQ4_0, q4.data(), q4.size(), y.data(), 32);
  EXPECT_EQ(y[0], -10.f);
  EXPECT_EQ(y[16], 14.f);
  EXPECT_EQ(y[1], 0.f);
  // MXFP4: exponent 128 -> scale 2^(128-127) = 2; E2M1 codes 0xf = -6 and 7 = 6.
  std::vector<uint8_t> mx(17, 0);
  mx[0] = 128, mx[1] = 0x7f;  // element 0: code 0xf (-6), element 16: code 7 (6)
  dequantize(GgmlType::kMXFP4, mx.data(), mx.size(), y.data(), 32);
  EXPECT_EQ(y[0], -12.f);  // -6 x 2^(128-127)
  EXPECT_EQ(y[16], 12.f);
}

}  // namespace
}  // namespace moex::gguf
