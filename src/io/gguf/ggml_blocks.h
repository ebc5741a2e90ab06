// Where each element's code and each sub-block's scale sit in ggml's block layouts
// (docs/gguf.md, "Block layouts"): the one set of accessors that the dequantizers, the repack
// into moex's affine layouts and the repack into moex's ggml modes all read blocks with.
#pragma once

#include <cstdint>

namespace moex::gguf::blocks {

// The 4-bit code of element i < 32 of a 32-element block's 16 bytes of nibbles: the low
// nibble of byte i for i < 16, the high nibble of byte i - 16 otherwise.
inline int nibble32(const uint8_t* qs, int i) { return i < 16 ? qs[i] & 0x0f : qs[i - 16] >> 4; }

// The non-linear 4-bit code book of IQ4_NL and IQ4_XS.
inline constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};

// The fifth bit of element i of Q5_0 / Q5_1: bit i of the 32-bit little-endian word at qh.
inline int high_bit(const uint8_t* qh, int i) { return (qh[i / 8] >> (i % 8)) & 1; }

// Element e's 2-bit code in 64 bytes (Q2_K's codes, Q3_K's low bits, Q6_K's high bits): the
// half is e / 128, the shift 2 * ((e % 128) / 32), the byte e % 32 of the half.
inline int two_bits(const uint8_t* q, int e) {
  return (q[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}

// Q4_K / Q5_K's twelve bytes of 6-bit scales and minimums for the eight 32-element
// sub-blocks: j < 4 in the low six bits of bytes j and j + 4; j >= 4 with four low bits in
// byte j + 4 (scale low nibble, minimum high nibble) and two high bits from the top of bytes
// j - 4 (scale) and j (minimum).
inline void scale_min_k4(const uint8_t* s, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Element e's 4-bit code in Q4_K / Q5_K's 128 bytes of nibbles: sub-block j = e / 32 uses the
// low (even j) or high (odd j) nibbles of bytes 32 * (j / 2) .. + 31.
inline int nibble_k(const uint8_t* qs, int e) {
  const int j = e / 32;
  return (qs[32 * (j / 2) + e % 32] >> (4 * (j % 2))) & 0x0f;
}

// Q3_K's signed 6-bit scale of 16-element group g (its 12 bytes of scales at s), in [-32, 31].
inline int q3_k_scale(const uint8_t* s, int g) {
  const int lo = (s[g % 8] >> (4 * (g / 8))) & 0x0f;
  const int hi = (s[8 + g % 4] >> (2 * (g / 4))) & 0x03;
  return (lo | hi << 4) - 32;
}

// Q3_K's signed code of element e in [-4, 3]: the low two bits, minus 4 when its mask bit
// (bit e / 32 of byte e % 32) is clear.
inline int q3_k_code(const uint8_t* hmask, const uint8_t* qs, int e) {
  return two_bits(qs, e) - (((hmask[e % 32] >> (e / 32)) & 1) ? 0 : 4);
}

// Q6_K's unsigned 6-bit code of element e (its signed value is this minus 32): in each half of
// 128 elements, element r takes the low (r < 64) or high nibble of byte r % 64 of the half's
// 64 bytes of ql, and its two high bits from qh as two_bits reads them.
inline int q6_k_code(const uint8_t* ql, const uint8_t* qh, int e) {
  const int r = e % 128;
  return ((ql[64 * (e / 128) + r % 64] >> (4 * (r / 64))) & 0x0f) | two_bits(qh, e) << 4;
}

}  // namespace moex::gguf::blocks
