// Dequantization of the "K" super-blocks (256 elements): Q2_K, Q3_K, Q4_K, Q5_K, Q6_K. The
// byte layouts and element orders are described in docs/gguf.md; each sub-block scale is
// one f32 product (d * scale), then each element one more product (and one difference for
// the types with minimums), each rounded on its own as numpy computes them.
#include <cstdint>

#include "io/gguf/ggml_dequantize.h"

namespace moex::gguf {
namespace {

// Element e of a super-block whose 2-bit codes fill 64 bytes in two halves of 32 bytes: the
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

// Element e's 4-bit code in 128 bytes of nibbles: sub-block j = e / 32 uses the low (even j)
// or high (odd j) nibbles of bytes 32 * (j / 2) .. + 31.
inline int nibble_k(const uint8_t* qs, int e) {
  const int j = e / 32;
  return (qs[32 * (j / 2) + e % 32] >> (4 * (j % 2))) & 0x0f;
}

}  // namespace

// 16 bytes of scales (low nibble: scale, high nibble: minimum, per 16 elements), 64 bytes of
// 2-bit codes, f16 d, f16 dmin. w = (d * scale) * q - (dmin * min).
void dequantize_q2_k(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* qs = b + 16;
  const float d = load_f16(b + 80), dmin = load_f16(b + 82);
  for (int g = 0; g < 16; ++g) {
    const float dl = d * float(scales[g] & 0x0f);
    const float ml = dmin * float(scales[g] >> 4);
    for (int e = 16 * g; e < 16 * g + 16; ++e) y[e] = dl * float(two_bits(qs, e)) - ml;
  }
}

// 32 bytes of high-bit masks, 64 bytes of 2-bit low codes, 12 bytes of 6-bit signed scales
// (offset 32), f16 d. Element e's code is low - 4 when its mask bit (bit e / 32 of byte
// e % 32) is clear, low when set; w = (d * scale) * code.
void dequantize_q3_k(const uint8_t* b, float* y) {
  const uint8_t* hmask = b;
  const uint8_t* qs = b + 32;
  const uint8_t* s = b + 96;
  const float d = load_f16(b + 108);
  for (int g = 0; g < 16; ++g) {
    const int lo = (s[g % 8] >> (4 * (g / 8))) & 0x0f;
    const int hi = (s[8 + g % 4] >> (2 * (g / 4))) & 0x03;
    const float dl = d * float((lo | hi << 4) - 32);
    for (int e = 16 * g; e < 16 * g + 16; ++e) {
      const int high = (hmask[e % 32] >> (e / 32)) & 1;
      y[e] = dl * float(two_bits(qs, e) - (high ? 0 : 4));
    }
  }
}

// f16 d, f16 dmin, 12 bytes of 6-bit scales and minimums, 128 bytes of 4-bit codes.
// w = (d * scale) * q - (dmin * min) per 32-element sub-block.
void dequantize_q4_k(const uint8_t* b, float* y) {
  const float d = load_f16(b), dmin = load_f16(b + 2);
  const uint8_t* qs = b + 16;
  for (int j = 0; j < 8; ++j) {
    int sc = 0, m = 0;
    scale_min_k4(b + 4, j, &sc, &m);
    const float dl = d * float(sc), ml = dmin * float(m);
    for (int e = 32 * j; e < 32 * j + 32; ++e) y[e] = dl * float(nibble_k(qs, e)) - ml;
  }
}

// Q4_K's layout with 32 bytes of fifth bits (bit j of byte e % 32 for sub-block j) before the
// nibbles.
void dequantize_q5_k(const uint8_t* b, float* y) {
  const float d = load_f16(b), dmin = load_f16(b + 2);
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + 48;
  for (int j = 0; j < 8; ++j) {
    int sc = 0, m = 0;
    scale_min_k4(b + 4, j, &sc, &m);
    const float dl = d * float(sc), ml = dmin * float(m);
    for (int e = 32 * j; e < 32 * j + 32; ++e) {
      const int q = nibble_k(qs, e) | ((qh[e % 32] >> j) & 1) << 4;
      y[e] = dl * float(q) - ml;
    }
  }
}

// 128 bytes of low nibbles, 64 bytes of 2-bit highs, 16 int8 scales (per 16 elements), f16 d.
// In each half of 128 elements, element r takes the low (r < 64) or high nibble of byte
// r % 64 and its two high bits as in Q2_K; code = (low | high << 4) - 32;
// w = (d * scale) * code.
void dequantize_q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const auto* scales = reinterpret_cast<const int8_t*>(b + 192);
  const float d = load_f16(b + 208);
  for (int g = 0; g < 16; ++g) {
    const float dl = d * float(scales[g]);
    for (int e = 16 * g; e < 16 * g + 16; ++e) {
      const int r = e % 128;
      const int low = (ql[64 * (e / 128) + r % 64] >> (4 * (r / 64))) & 0x0f;
      y[e] = dl * float((low | two_bits(qh, e) << 4) - 32);
    }
  }
}

}  // namespace moex::gguf
