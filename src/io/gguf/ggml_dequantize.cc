// Dequantization of the plain types, the 32-element block types (Q4_0..Q8_0, MXFP4, IQ4_NL)
// and IQ4_XS, plus the dispatch over all dequantizable types. The block layouts are
// described in docs/gguf.md; each f32 operation is done on its own (-ffp-contract=off), as
// numpy computes it.
#include "io/gguf/ggml_dequantize.h"

#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "io/gguf/ggml_blocks.h"

namespace moex::gguf {

float load_f16(const uint8_t* p) { return f16_to_f32(uint16_t(p[0] | (p[1] << 8))); }

namespace {

using blocks::high_bit;
using blocks::nibble32;

using blocks::kIq4Values;
// MXFP4's E2M1 code book, doubled so every entry is an integer (the scale is halved to match).
constexpr int8_t kE2m1Doubled[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// Half of the E8M0 scale 2^(e - 127), i.e. 2^(e - 128), as f32 bits: e = 0 and 1 give the
// subnormals 2^-128 and 2^-127; e = 255 gives 2^126 (the format's NaN code is not special-cased,
// as ggml and gguf-py do not).
inline float e8m0_half(uint8_t e) {
  const uint32_t bits = e < 2 ? uint32_t{0x00200000} << e : uint32_t(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void q4_0(const uint8_t* b, float* y) {  // f16 d, 16 bytes of nibbles; w = d * (q - 8)
  const float d = load_f16(b);
  for (int i = 0; i < 32; ++i) y[i] = d * float(nibble32(b + 2, i) - 8);
}

void q4_1(const uint8_t* b, float* y) {  // f16 d, f16 m, nibbles; w = d * q + m
  const float d = load_f16(b), m = load_f16(b + 2);
  for (int i = 0; i < 32; ++i) y[i] = d * float(nibble32(b + 4, i)) + m;
}


void q5_0(const uint8_t* b, float* y) {  // f16 d, 4 bytes of fifth bits, nibbles; d * (q - 16)
  const float d = load_f16(b);
  for (int i = 0; i < 32; ++i) y[i] = d * float((nibble32(b + 6, i) | high_bit(b + 2, i) << 4) - 16);
}

void q5_1(const uint8_t* b, float* y) {  // f16 d, f16 m, fifth bits, nibbles; d * q + m
  const float d = load_f16(b), m = load_f16(b + 2);
  for (int i = 0; i < 32; ++i) y[i] = d * float(nibble32(b + 8, i) | high_bit(b + 4, i) << 4) + m;
}

void q8_0(const uint8_t* b, float* y) {  // f16 d, 32 int8 codes; w = q * d
  const float d = load_f16(b);
  for (int i = 0; i < 32; ++i) y[i] = float(int8_t(b[2 + i])) * d;
}

void mxfp4(const uint8_t* b, float* y) {  // E8M0 exponent, nibbles of E2M1 codes
  const float d = e8m0_half(b[0]);
  for (int i = 0; i < 32; ++i) y[i] = d * float(kE2m1Doubled[nibble32(b + 1, i)]);
}

void iq4_nl(const uint8_t* b, float* y) {  // f16 d, nibbles indexing the code book
  const float d = load_f16(b);
  for (int i = 0; i < 32; ++i) y[i] = d * float(kIq4Values[nibble32(b + 2, i)]);
}

// f16 d, uint16 of 2-bit scale highs, 4 bytes of 4-bit scale lows, then 8 sub-blocks of 32
// elements (16 bytes of nibbles each, ordered as in a 32-element block).
void iq4_xs(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  const unsigned scales_h = unsigned(b[2] | (b[3] << 8));
  const uint8_t* scales_l = b + 4;
  const uint8_t* qs = b + 8;
  for (int j = 0; j < 8; ++j) {
    const int lo = (scales_l[j / 2] >> (4 * (j % 2))) & 0x0f;
    const int hi = (scales_h >> (2 * j)) & 0x03;
    const float dl = d * float((lo | hi << 4) - 32);
    for (int i = 0; i < 32; ++i) y[32 * j + i] = dl * float(kIq4Values[nibble32(qs + 16 * j, i)]);
  }
}

}  // namespace

void dequantize_blocks(GgmlType t, const uint8_t* src, float* dst, int64_t blocks) {
  const GgmlTypeInfo& info = ggml_info(t);
  void (*fn)(const uint8_t*, float*) = nullptr;
  switch (t) {
    case GgmlType::kF32: std::memcpy(dst, src, size_t(blocks) * 4); return;
    case GgmlType::kF16:
      for (int64_t i = 0; i < blocks; ++i) dst[i] = load_f16(src + 2 * i);
      return;
    case GgmlType::kBF16:
      for (int64_t i = 0; i < blocks; ++i) dst[i] = bf16_to_f32(uint16_t(src[2 * i] | (src[2 * i + 1] << 8)));
      return;
    case GgmlType::kQ4_0: fn = q4_0; break;
    case GgmlType::kQ4_1: fn = q4_1; break;
    case GgmlType::kQ5_0: fn = q5_0; break;
    case GgmlType::kQ5_1: fn = q5_1; break;
    case GgmlType::kQ8_0: fn = q8_0; break;
    case GgmlType::kQ2_K: fn = dequantize_q2_k; break;
    case GgmlType::kQ3_K: fn = dequantize_q3_k; break;
    case GgmlType::kQ4_K: fn = dequantize_q4_k; break;
    case GgmlType::kQ5_K: fn = dequantize_q5_k; break;
    case GgmlType::kQ6_K: fn = dequantize_q6_k; break;
    case GgmlType::kMXFP4: fn = mxfp4; break;
    case GgmlType::kIQ4_NL: fn = iq4_nl; break;
    case GgmlType::kIQ4_XS: fn = iq4_xs; break;
    default: return;  // dequantize() refuses these before calling
  }
  for (int64_t i = 0; i < blocks; ++i) fn(src + i * info.block_bytes, dst + i * info.block_elems);
}

void dequantize(GgmlType t, const uint8_t* src, uint64_t src_bytes, float* dst, int64_t n) {
  const GgmlTypeInfo& info = ggml_info(t);
  if (!info.dequantizable)
    fail("dequantize: ggml type ", info.name, " has no dequantization in moex yet");
  if (n < 0 || n % info.block_elems != 0)
    fail("dequantize: ", n, " elements of ", info.name, " is not a whole number of ", info.block_elems,
         "-element blocks");
  const int64_t blocks = n / info.block_elems;
  if (src_bytes != uint64_t(blocks) * uint64_t(info.block_bytes))
    fail("dequantize: ", n, " elements of ", info.name, " take ",
         uint64_t(blocks) * uint64_t(info.block_bytes), " bytes but ", src_bytes, " were given");
  dequantize_blocks(t, src, dst, blocks);
}

}  // namespace moex::gguf
