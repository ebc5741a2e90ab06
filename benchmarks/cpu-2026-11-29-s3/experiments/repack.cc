// The row-block layout (see repack.h): sizes and the byte-for-byte copy from MLX's arrays.
#include "kernels/repack.h"

#include <cstring>

#include "core/parallel.h"

namespace moex::kernels {
namespace {

inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

}  // namespace

int64_t row_block_unit_elems(int bits) { return bits == 4 ? 128 : (bits == 2 ? 256 : 64); }

int64_t RowBlockLayout::units(int64_t c, int64_t k, int group_size) const {
  const int64_t e0 = c * kChunkGroups * group_size;
  const int64_t e1 = e0 + int64_t(kChunkGroups) * group_size < k
                         ? e0 + int64_t(kChunkGroups) * group_size
                         : k;
  return (e1 - e0 + unit_elems - 1) / unit_elems;
}

RowBlockLayout row_block_layout(const QuantWeightsView& w) {
  RowBlockLayout L;
  L.unit_elems = row_block_unit_elems(w.bits);
  L.unit_bytes = L.unit_elems * w.bits / 8;
  const int64_t groups = w.groups_per_row();
  L.chunks = (groups + kChunkGroups - 1) / kChunkGroups;
  L.sb_bytes = 2 * int64_t(kBlockRows) * kChunkGroups * int64_t(dtype_size(w.sb_dtype));
  auto chunk_bytes = [&](int64_t c) {
    return L.sb_bytes + round_up(L.units(c, w.k, w.group_size) * kBlockRows * L.unit_bytes, 64);
  };
  L.full_chunk_bytes = chunk_bytes(0);
  L.block_bytes = (L.chunks - 1) * L.full_chunk_bytes + chunk_bytes(L.chunks - 1);
  L.blocks = (w.n + kBlockRows - 1) / kBlockRows;
  L.expert_bytes = L.blocks * L.block_bytes;
  L.total_bytes = L.expert_bytes * w.experts;
  return L;
}

void repack_row_blocks(const QuantWeightsView& w, uint8_t* dst, int64_t expert_begin,
                       int64_t expert_end) {
  const RowBlockLayout L = row_block_layout(w);
  const int64_t groups = w.groups_per_row(), row_bytes = w.row_bytes();
  const size_t sz = dtype_size(w.sb_dtype);
  const auto* scales = static_cast<const uint8_t*>(w.scales);
  const auto* biases = static_cast<const uint8_t*>(w.biases);
  for (int64_t e = expert_begin; e < expert_end; ++e) {
    uint8_t* block = dst + e * L.expert_bytes;
    for (int64_t b = 0; b < L.blocks; ++b, block += L.block_bytes) {
      std::memset(block, 0, size_t(L.block_bytes));
      int64_t rows[kBlockRows];
      for (int r = 0; r < kBlockRows; ++r) {
        const int64_t row = b * kBlockRows + r;
        rows[r] = row < w.n ? row : w.n - 1;
      }
      uint8_t* chunk = block;
      for (int64_t c = 0; c < L.chunks; ++c) {
        const int64_t g0 = c * kChunkGroups;
        const int64_t ng = groups - g0 < kChunkGroups ? groups - g0 : kChunkGroups;
        for (int r = 0; r < kBlockRows; ++r) {
          const size_t src = size_t(w.sb_offset(e, rows[r]) + g0) * sz;
          const size_t lane0 = size_t(r) * kChunkGroups * sz;
          std::memcpy(chunk + lane0, scales + src, size_t(ng) * sz);
          std::memcpy(chunk + L.sb_bytes / 2 + lane0, biases + src, size_t(ng) * sz);
        }
        uint8_t* units = chunk + L.sb_bytes;
        const int64_t nu = L.units(c, w.k, w.group_size);
        for (int64_t u = 0; u < nu; ++u) {
          const int64_t byte0 = (g0 * w.group_size + u * L.unit_elems) * w.bits / 8;
          const int64_t len = row_bytes - byte0 < L.unit_bytes ? row_bytes - byte0 : L.unit_bytes;
          for (int r = 0; r < kBlockRows; ++r)
            std::memcpy(units + (u * kBlockRows + r) * L.unit_bytes, w.row(e, rows[r]) + byte0,
                        size_t(len));
        }
        chunk += L.sb_bytes + round_up(nu * kBlockRows * L.unit_bytes, 64);
      }
    }
  }
}

HugeArray<uint8_t> make_row_blocks(QuantWeightsView& w, const char* what) {
  const RowBlockLayout L = row_block_layout(w);
  HugeArray<uint8_t> buf = make_huge_array<uint8_t>(size_t(L.total_bytes), what);
  uint8_t* dst = buf.get();
  parallel_for(w.experts, [&](int64_t lo, int64_t hi) { repack_row_blocks(w, dst, lo, hi); });
  w.row_blocks = dst;
  return buf;
}

}  // namespace moex::kernels
