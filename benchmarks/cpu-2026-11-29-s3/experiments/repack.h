// The row-block layout: the same quantized weights as MLX's three arrays (packed rows, scales,
// biases), rearranged so that the AVX-512 row kernel reads one sequential stream per call.
//
// Why: the kernel computes 4 rows at a time; from MLX's layout that is 4 row streams plus 8
// scale/bias streams, and the hardware prefetchers and DRAM serve that worse than one stream
// (src/kernels/README.md has the measurements). The values are copied bit for bit: a row computed
// from this layout is bit-identical to the same row computed from MLX's arrays.
//
// Layout, per expert, per block of kBlockRows rows (the last block repeats the last row), per
// chunk of up to kChunkGroups weight groups:
//   scales: [kBlockRows][kChunkGroups] in the stored dtype (lanes past the row's groups zero)
//   biases: the same
//   weights: per SIMD unit of the chunk (unit_elems elements of a row, unit_bytes packed bytes),
//            the unit of row 0, row 1, row 2, row 3; a unit past the row's end is zero-padded;
//            the chunk's weight bytes are padded to a multiple of 64.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/huge_pages.h"
#include "core/isa.h"
#include "kernels/moe_contract.h"

namespace moex::kernels {

inline constexpr int kBlockRows = 4;      // rows per block (the kernel's row block)
inline constexpr int kChunkGroups = 16;   // groups per chunk (one vector of 16 scales)

struct RowBlockLayout {
  int64_t unit_elems = 0, unit_bytes = 0;  // one SIMD weight unit of one row
  int64_t chunks = 0;                      // ceil(groups / kChunkGroups)
  int64_t sb_bytes = 0;                    // scales + biases of one chunk
  int64_t full_chunk_bytes = 0;            // a chunk of kChunkGroups groups
  int64_t block_bytes = 0;                 // all chunks of one block
  int64_t blocks = 0;                      // per expert: ceil(n / kBlockRows)
  int64_t expert_bytes = 0;
  int64_t total_bytes = 0;                 // all experts
  // Weight units in chunk c (the last chunk may hold fewer groups).
  int64_t units(int64_t c, int64_t k, int group_size) const;
};

// Elements per SIMD unit for a bit width (what one weight load of the AVX-512 kernel unpacks).
int64_t row_block_unit_elems(int bits);

// The layout of `w` (w must satisfy qdot_unsupported_reason() == nullptr).
RowBlockLayout row_block_layout(const QuantWeightsView& w);

// Writes experts [expert_begin, expert_end) of `w` in the row-block layout to
// dst + expert * expert_bytes (dst holds row_block_layout(w).total_bytes bytes).
void repack_row_blocks(const QuantWeightsView& w, uint8_t* dst, int64_t expert_begin,
                       int64_t expert_end);

// Whether kernels at `isa` read row blocks (only the AVX-512 kernels do).
inline bool isa_reads_row_blocks(Isa isa) { return isa == Isa::kAvx512; }

// A huge-page buffer holding all of `w` in the row-block layout, filled in parallel over
// experts; sets w.row_blocks to it. The caller keeps the buffer alive as long as w is used.
// Throws moex::Error naming `what` if the allocation fails.
HugeArray<uint8_t> make_row_blocks(QuantWeightsView& w, const char* what);

}  // namespace moex::kernels
