// The row-block layout (repack.h): the copy is bit for bit (checked against MLX's arrays
// field by field), and every kernel that reads it produces the same bits as from MLX's arrays,
// for any row range, over bits x group size x scale dtype x row length (unit, chunk and row
// tails), with canaries around the output.
#include "kernels/repack.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/kernels_test_util.h"
#include "quant/format.h"

namespace moex::kernels {
namespace {

using testing::make_random_quant;
using testing::random_normal;

constexpr uint32_t kCanary = 0x7fc0dead;

std::vector<uint8_t> repack_all(const QuantWeightsView& w) {
  const RowBlockLayout L = row_block_layout(w);
  std::vector<uint8_t> out(size_t(L.total_bytes) + 64, 0xAB);  // 0xAB: bytes never written
  repack_row_blocks(w, out.data(), 0, w.experts);
  for (size_t i = size_t(L.total_bytes); i < out.size(); ++i) EXPECT_EQ(out[i], 0xAB);
  return out;
}

// Row lengths per group size: one unit, a partial unit, a partial chunk, more than one chunk.
std::vector<int64_t> row_lengths(int gs) {
  switch (gs) {
    case 32:
      return {32, 96, 544, 1056};
    case 64:
      return {64, 320, 1088};
    default:
      return {128, 384, 2176};
  }
}

TEST(RowBlocks, LayoutHoldsEveryFieldOfTheMlxArrays) {
  for (int bits : quant::kValidBits)
    for (int gs : quant::kValidGroupSizes)
      for (DType sb : {DType::BF16, DType::F32})
        for (int64_t k : row_lengths(gs)) {
          SCOPED_TRACE("bits " + std::to_string(bits) + " gs " + std::to_string(gs) + " k " +
                       std::to_string(k) + " " + dtype_name(sb));
          const int64_t n = 6;  // two blocks, the second half repeated rows
          auto q = make_random_quant(2, n, k, bits, gs, sb, uint64_t(bits * 1000 + gs + k));
          const QuantWeightsView& w = q.view;
          const auto packed = repack_all(w);
          const RowBlockLayout L = row_block_layout(w);
          ASSERT_EQ(L.blocks, 2);
          ASSERT_EQ(L.block_bytes % 64, 0);
          const size_t sz = dtype_size(sb);
          for (int64_t e = 0; e < 2; ++e)
            for (int64_t row = 0; row < 8; ++row) {  // rows 6 and 7 repeat row 5
              const int64_t src = row < n ? row : n - 1, b = row / 4, r = row % 4;
              const uint8_t* block = packed.data() + e * L.expert_bytes + b * L.block_bytes;
              for (int64_t g = 0; g < w.groups_per_row(); ++g) {
                const int64_t c = g / kChunkGroups, lane = g % kChunkGroups;
                const uint8_t* chunk = block + c * L.full_chunk_bytes;
                const size_t at = size_t((r * kChunkGroups + lane)) * sz;
                const size_t from = size_t(w.sb_offset(e, src) + g) * sz;
                ASSERT_EQ(0, std::memcmp(chunk + at, q.scales.data() + from, sz)) << "scale " << g;
                ASSERT_EQ(0, std::memcmp(chunk + L.sb_bytes / 2 + at, q.biases.data() + from, sz))
                    << "bias " << g;
              }
              for (int64_t i = 0; i < k; i += L.unit_elems) {
                const int64_t c = i / (int64_t(kChunkGroups) * gs);
                const int64_t u = (i - c * kChunkGroups * gs) / L.unit_elems;
                const uint8_t* unit = block + c * L.full_chunk_bytes + L.sb_bytes +
                                      (u * kBlockRows + r) * L.unit_bytes;
                const int64_t len = std::min<int64_t>(L.unit_bytes, (k - i) * bits / 8);
                ASSERT_EQ(0, std::memcmp(unit, w.row(e, src) + i * bits / 8, size_t(len)))
                    << "row " << row << " element " << i;
                for (int64_t j = len; j < L.unit_bytes; ++j) ASSERT_EQ(unit[j], 0) << "padding";
              }
            }
        }
}

TEST(RowBlocks, KernelsGiveTheSameBitsAsFromMlxArrays) {
  int checked = 0;
  uint64_t seed = 7;
  for (const QdotKernel& kern : qdot_kernels()) {
    if (!isa_supported(kern.isa)) continue;
    for (int gs : quant::kValidGroupSizes)
      for (DType sb : {DType::BF16, DType::F16, DType::F32})
        for (int64_t k : row_lengths(gs)) {
          SCOPED_TRACE(std::string(kern.name) + " gs " + std::to_string(gs) + " k " +
                       std::to_string(k) + " " + dtype_name(sb));
          const int64_t n = 11;
          auto q = make_random_quant(3, n, k, kern.bits, gs, sb, ++seed);
          const auto packed = repack_all(q.view);
          QuantWeightsView rb = q.view;
          rb.row_blocks = packed.data();
          // The AVX-512 kernels must read the row blocks alone: their view of MLX's arrays
          // points at zeros. Every other kernel ignores row_blocks and keeps the real arrays.
          const std::vector<uint8_t> zeros(std::max({q.w.size(), q.scales.size()}), 0);
          if (kern.isa == Isa::kAvx512) rb.w = zeros.data(), rb.scales = rb.biases = zeros.data();
          auto x = random_normal(k, 1.f, ++seed);
          PreparedVectors px;
          px.prepare(kern, x.data(), 1, k, k, gs);
          for (int64_t e : {int64_t{0}, int64_t{2}})
            for (auto [r0, r1] : {std::pair<int64_t, int64_t>{0, n}, {1, 6}, {3, 4}, {5, 11}, {8, 11}}) {
              std::vector<float> want(size_t(r1 - r0)), got(size_t(r1 - r0 + 2));
              kern.dot_rows({&q.view, e, r0, r1, px.at(0), want.data()});
              for (float& f : got) std::memcpy(&f, &kCanary, 4);
              kern.dot_rows({&rb, e, r0, r1, px.at(0), got.data() + 1});
              ASSERT_EQ(0, std::memcmp(want.data(), got.data() + 1, want.size() * 4))
                  << "expert " << e << " rows " << r0 << ".." << r1;
              uint32_t head, tail;
              std::memcpy(&head, &got.front(), 4);
              std::memcpy(&tail, &got.back(), 4);
              EXPECT_EQ(head, kCanary);
              EXPECT_EQ(tail, kCanary);
            }
          ++checked;
        }
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace moex::kernels
