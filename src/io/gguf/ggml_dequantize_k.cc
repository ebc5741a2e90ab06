// Dequantization of the "K" super-blocks (256 elements): Q2_K, Q3_K, Q4_K, Q5_K, Q6_K. The
// byte layouts and element orders are described in docs/gguf.md; each sub-block scale is
// one f32 product (d * scale), then each element one more product (and one difference for
// the types with minimums), each rounded on its own as numpy computes them.
#include <cstdint>

#include "io/gguf/ggml_blocks.h"
#include "io/gguf/ggml_dequantize.h"

namespace moex::gguf {
using blocks::nibble_k;
using blocks::scale_min_k4;
using blocks::two_bits;

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
    const float dl = d * float(blocks::q3_k_scale(s, g));
    for (int e = 16 * g; e < 16 * g + 16; ++e) y[e] = dl * float(blocks::q3_k_code(hmask, qs, e));
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
    for (int e = 16 * g; e < 16 * g + 16; ++e) y[e] = dl * float(blocks::q6_k_code(ql, qh, e) - 32);
  }
}

}  // namespace moex::gguf
