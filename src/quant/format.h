// The MLX affine quantization format (docs/background.md §3): valid bits / group sizes, packed
// row sizes, and extraction of one quantized value. For every width (2,3,4,5,6,8) a packed
// row is one little-endian, least-significant-bit-first bit stream: element i occupies bits
// [bits*i, bits*(i+1)). For 2/4/8 bits this is identical to MLX's "element i in word
// i/(32/bits) at offset bits*(i%(32/bits))" on a little-endian machine.
#pragma once

#include <cstdint>

namespace moex::quant {

inline constexpr int kValidBits[] = {2, 3, 4, 5, 6, 8};
inline constexpr int kValidGroupSizes[] = {32, 64, 128};

constexpr bool is_valid_bits(int bits) {
  for (int b : kValidBits)
    if (b == bits) return true;
  return false;
}
constexpr bool is_valid_group_size(int gs) {
  for (int g : kValidGroupSizes)
    if (g == gs) return true;
  return false;
}

// Bytes of one packed row of k values (k must be a multiple of 32 so rows are whole words).
constexpr int64_t packed_row_bytes(int64_t k, int bits) { return k * bits / 8; }
constexpr int64_t packed_row_words(int64_t k, int bits) { return k * bits / 32; }

// Quantized value i of a packed row. Never reads past byte packed_row_bytes(i+1, bits)-1.
inline uint32_t extract_q(const uint8_t* row, int64_t i, int bits) {
  const uint64_t bit = uint64_t(i) * uint64_t(bits);
  const uint8_t* p = row + (bit >> 3);
  const int shift = int(bit & 7);
  uint32_t v = p[0];
  if (shift + bits > 8) v |= uint32_t(p[1]) << 8;
  return (v >> shift) & ((1u << bits) - 1u);
}

// Writes value q (< 2^bits) as element i of a packed row (the row must start zeroed or hold
// stale bits only in element i's position, which are cleared).
inline void insert_q(uint8_t* row, int64_t i, int bits, uint32_t q) {
  const uint64_t bit = uint64_t(i) * uint64_t(bits);
  uint8_t* p = row + (bit >> 3);
  const int shift = int(bit & 7);
  const uint32_t mask = ((1u << bits) - 1u) << shift;
  const uint32_t val = (q << shift) & mask;
  p[0] = uint8_t((p[0] & ~mask) | val);
  if (shift + bits > 8) p[1] = uint8_t((p[1] & ~(mask >> 8)) | (val >> 8));
}

}  // namespace moex::quant
