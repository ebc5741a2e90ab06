// ggml blocks -> moex's ggml block modes (quant/format.h): the codes as one packed bit stream
// per row, and each row's scale blob (the blocks' F16 halves and sub-block scale codes, copied
// as they are). Nothing is computed, so moex's dequantization of the result is ggml's values
// bit for bit (docs/gguf.md, "The ggml block modes").
#include <cstring>

#include "io/gguf/ggml_blocks.h"
#include "io/gguf/ggml_repack.h"

namespace moex::gguf {
namespace {

// One block's parts: the unsigned code of each element; per group its scale code and (the K
// modes with minimums) min code; the block's F16 d and dmin as stored.
struct NativeBlock {
  uint32_t q[256];
  uint8_t sc[16];
  uint8_t m[16];
  uint16_t d = 0, dmin = 0;
};
using NativeFn = void (*)(const uint8_t* b, NativeBlock* out);

inline uint16_t half_bits(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }

void nv_q4_0(const uint8_t* b, NativeBlock* o) {  // d, 16 bytes of nibbles
  o->d = half_bits(b);
  for (int i = 0; i < 32; ++i) o->q[i] = uint32_t(blocks::nibble32(b + 2, i));
}
void nv_q5_0(const uint8_t* b, NativeBlock* o) {  // d, fifth bits, nibbles
  o->d = half_bits(b);
  for (int i = 0; i < 32; ++i)
    o->q[i] = uint32_t(blocks::nibble32(b + 6, i) | blocks::high_bit(b + 2, i) << 4);
}
void nv_q8_0(const uint8_t* b, NativeBlock* o) {  // d, int8 codes: q + 128 is unsigned
  o->d = half_bits(b);
  for (int i = 0; i < 32; ++i) o->q[i] = uint32_t(b[2 + i] ^ 0x80);
}
// IQ4_NL: d, 16 bytes of nibbles indexing the code book; the code book value + 128 (in
// [1, 241]) is an 8-bit code with zero point 128, so the block is Q8_0's form.
void nv_iq4_nl(const uint8_t* b, NativeBlock* o) {
  o->d = half_bits(b);
  for (int i = 0; i < 32; ++i) o->q[i] = uint32_t(blocks::kIq4Values[blocks::nibble32(b + 2, i)] + 128);
}
// IQ4_XS: d, 2 bytes of high and 4 of low sub-scale bits, then per 32-element sub-block 16
// bytes of nibbles; sub-block j's scale is d * (sc_j - 32), its codes the code book + 128.
void nv_iq4_xs(const uint8_t* b, NativeBlock* o) {
  o->d = half_bits(b);
  const unsigned scales_h = unsigned(b[2] | (b[3] << 8));
  for (int j = 0; j < 8; ++j) {
    const int lo = (b[4 + j / 2] >> (4 * (j % 2))) & 15, hi = (scales_h >> (2 * j)) & 3;
    o->sc[j] = uint8_t(int8_t((lo | hi << 4) - 32));
    for (int i = 0; i < 32; ++i)
      o->q[32 * j + i] = uint32_t(blocks::kIq4Values[blocks::nibble32(b + 8 + 16 * j, i)] + 128);
  }
}
void nv_q2_k(const uint8_t* b, NativeBlock* o) {  // 16 scale|min bytes, 2-bit codes, d, dmin
  for (int g = 0; g < 16; ++g) {
    o->sc[g] = b[g] & 0x0f;
    o->m[g] = b[g] >> 4;
  }
  for (int e = 0; e < 256; ++e) o->q[e] = uint32_t(blocks::two_bits(b + 16, e));
  o->d = half_bits(b + 80);
  o->dmin = half_bits(b + 82);
}
void nv_q3_k(const uint8_t* b, NativeBlock* o) {  // masks, low bits, 6-bit scales, d
  for (int g = 0; g < 16; ++g) o->sc[g] = uint8_t(int8_t(blocks::q3_k_scale(b + 96, g)));
  for (int e = 0; e < 256; ++e) o->q[e] = uint32_t(blocks::q3_k_code(b, b + 32, e) + 4);
  o->d = half_bits(b + 108);
}
void nv_k4(const uint8_t* b, const uint8_t* qh, const uint8_t* qs, NativeBlock* o) {
  o->d = half_bits(b);
  o->dmin = half_bits(b + 2);
  for (int j = 0; j < 8; ++j) {
    int sc = 0, m = 0;
    blocks::scale_min_k4(b + 4, j, &sc, &m);
    o->sc[j] = uint8_t(sc);
    o->m[j] = uint8_t(m);
  }
  for (int e = 0; e < 256; ++e)
    o->q[e] = uint32_t(blocks::nibble_k(qs, e)) | (qh ? ((qh[e % 32] >> (e / 32)) & 1u) << 4 : 0u);
}
void nv_q4_k(const uint8_t* b, NativeBlock* o) { nv_k4(b, nullptr, b + 16, o); }
void nv_q5_k(const uint8_t* b, NativeBlock* o) { nv_k4(b, b + 16, b + 48, o); }
void nv_q6_k(const uint8_t* b, NativeBlock* o) {  // low nibbles, high bits, int8 scales, d
  for (int g = 0; g < 16; ++g) o->sc[g] = b[192 + g];
  for (int e = 0; e < 256; ++e) o->q[e] = uint32_t(blocks::q6_k_code(b, b + 128, e));
  o->d = half_bits(b + 208);
}

struct NativeSpec {
  quant::Mode mode;
  int bits, group_size;
  NativeFn fn;
};

std::optional<NativeSpec> native_spec(GgmlType t) {
  using quant::Mode;
  switch (t) {
    case GgmlType::kQ4_0: return NativeSpec{Mode::kGgmlQ0, 4, 32, nv_q4_0};
    case GgmlType::kQ5_0: return NativeSpec{Mode::kGgmlQ0, 5, 32, nv_q5_0};
    case GgmlType::kQ8_0: return NativeSpec{Mode::kGgmlQ0, 8, 32, nv_q8_0};
    case GgmlType::kIQ4_NL: return NativeSpec{Mode::kGgmlQ0, 8, 32, nv_iq4_nl};
    case GgmlType::kQ2_K: return NativeSpec{Mode::kGgmlKMin, 2, 16, nv_q2_k};
    case GgmlType::kQ4_K: return NativeSpec{Mode::kGgmlKMin, 4, 32, nv_q4_k};
    case GgmlType::kQ5_K: return NativeSpec{Mode::kGgmlKMin, 5, 32, nv_q5_k};
    case GgmlType::kQ3_K: return NativeSpec{Mode::kGgmlKZero, 3, 16, nv_q3_k};
    case GgmlType::kQ6_K: return NativeSpec{Mode::kGgmlKZero, 6, 16, nv_q6_k};
    case GgmlType::kIQ4_XS: return NativeSpec{Mode::kGgmlKZero, 8, 32, nv_iq4_xs};
    default: return std::nullopt;
  }
}

// n codes (a multiple of 8) into the bit stream at dst, which starts on a byte: whole bytes
// for 2, 4 and 8 bits (the load's hot loop), quant::insert_q for 3, 5 and 6.
void pack_codes(const uint32_t* q, int n, int bits, uint8_t* dst) {
  switch (bits) {
    case 8:
      for (int i = 0; i < n; ++i) dst[i] = uint8_t(q[i]);
      return;
    case 4:
      for (int i = 0; i < n; i += 2) dst[i / 2] = uint8_t(q[i] | q[i + 1] << 4);
      return;
    case 2:
      for (int i = 0; i < n; i += 4)
        dst[i / 4] = uint8_t(q[i] | q[i + 1] << 2 | q[i + 2] << 4 | q[i + 3] << 6);
      return;
    default:
      for (int i = 0; i < n; ++i) quant::insert_q(dst, i, bits, q[i]);
  }
}

void put_half(uint8_t* p, uint16_t h) {
  p[0] = uint8_t(h);
  p[1] = uint8_t(h >> 8);
}

}  // namespace

std::optional<quant::Format> native_format(GgmlType t) {
  if (auto s = native_spec(t)) return quant::Format::ggml(s->mode, s->bits, s->group_size);
  return std::nullopt;
}

quant::QuantizedMatrix native_repack(GgmlType t, const uint8_t* src, int64_t rows, int64_t k) {
  const NativeSpec spec = *native_spec(t);
  const GgmlTypeInfo& info = ggml_info(t);
  const quant::Format f = quant::Format::ggml(spec.mode, spec.bits, spec.group_size);
  quant::QuantizedMatrix m;
  m.mode = f.mode;
  m.bits = f.bits;
  m.group_size = f.group_size;
  m.sb_dtype = f.scale_dtype;
  m.rows = rows;
  m.k = k;
  const int64_t row_bytes = quant::packed_row_bytes(k, f.bits), blob_bytes = f.scale_row_bytes(k);
  const int64_t blocks = k / info.block_elems, groups = k / f.group_size;
  const int64_t supers = k / quant::kGgmlSuperBlock, row_src = blocks * info.block_bytes;
  const int block_groups = info.block_elems / f.group_size;
  m.packed.assign(size_t((rows * row_bytes + 3) / 4), 0u);
  m.scales.assign(size_t(rows * blob_bytes), 0);
  auto* packed = reinterpret_cast<uint8_t*>(m.packed.data());
  NativeBlock nb{};
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* dst = packed + r * row_bytes;
    uint8_t* blob = m.scales.data() + r * blob_bytes;
    for (int64_t bl = 0; bl < blocks; ++bl) {
      spec.fn(src + r * row_src + bl * info.block_bytes, &nb);
      const int64_t e0 = bl * info.block_elems;
      pack_codes(nb.q, info.block_elems, f.bits, dst + e0 * f.bits / 8);
      switch (f.mode) {
        case quant::Mode::kGgmlQ0:  // one group per block: its d
          put_half(blob + 2 * bl, nb.d);
          break;
        case quant::Mode::kGgmlKMin:
          std::memcpy(blob + bl * block_groups, nb.sc, size_t(block_groups));
          std::memcpy(blob + groups + bl * block_groups, nb.m, size_t(block_groups));
          put_half(blob + 2 * groups + 2 * bl, nb.d);
          put_half(blob + 2 * groups + 2 * supers + 2 * bl, nb.dmin);
          break;
        default:  // kGgmlKZero
          std::memcpy(blob + bl * block_groups, nb.sc, size_t(block_groups));
          put_half(blob + groups + 2 * bl, nb.d);
          break;
      }
    }
  }
  return m;
}

}  // namespace moex::gguf
