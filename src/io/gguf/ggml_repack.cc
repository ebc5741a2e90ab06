// ggml blocks -> moex's formats without changing a single dequantized value (docs/gguf.md,
// "Repacking into moex's formats"): the ggml block modes for the types that have one
// (ggml_native_repack.cc), else affine / mxfp4 / float layouts. Each block type has one function that
// turns a block into codes and per-group f32 scales and biases; the row loop packs them. Built
// with -ffp-contract=off: the sub-block scales are computed with ggml's own f32 products.
#include "io/gguf/ggml_repack.h"

#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "io/gguf/ggml_blocks.h"
#include "io/gguf/ggml_dequantize.h"

namespace moex::gguf {
namespace {

// One block in affine form: q[i] the unsigned code of element i, and per group of
// group_size elements its scale and bias (w = scale * q + bias).
struct AffineBlock {
  uint32_t q[256];
  float scale[8];
  float bias[8];
};

// Fills `out` from block b; returns nullptr, or why the block has no exact affine form.
using AffineFn = const char* (*)(const uint8_t* b, AffineBlock* out);

inline uint32_t rp_nib32(const uint8_t* qs, int i) { return uint32_t(blocks::nibble32(qs, i)); }
inline uint32_t rp_bit5(const uint8_t* qh, int i) { return uint32_t(blocks::high_bit(qh, i)); }

const char* rp_q4_1(const uint8_t* b, AffineBlock* out) {  // d * q + m: the same two operations
  for (int i = 0; i < 32; ++i) out->q[i] = rp_nib32(b + 4, i);
  out->scale[0] = load_f16(b);
  out->bias[0] = load_f16(b + 2);
  return nullptr;
}

const char* rp_q5_1(const uint8_t* b, AffineBlock* out) {
  for (int i = 0; i < 32; ++i) out->q[i] = rp_nib32(b + 8, i) | rp_bit5(b + 4, i) << 4;
  out->scale[0] = load_f16(b);
  out->bias[0] = load_f16(b + 2);
  return nullptr;
}

struct AffineSpec {
  int bits, group_size;
  AffineFn fn;
};

std::optional<AffineSpec> affine_spec(GgmlType t) {
  switch (t) {
    case GgmlType::kQ4_1: return AffineSpec{4, 32, rp_q4_1};
    case GgmlType::kQ5_1: return AffineSpec{5, 32, rp_q5_1};
    default: return std::nullopt;
  }
}

std::optional<DType> float_dtype(GgmlType t) {
  switch (t) {
    case GgmlType::kF32: return DType::F32;
    case GgmlType::kF16: return DType::F16;
    case GgmlType::kBF16: return DType::BF16;
    default: return std::nullopt;
  }
}

[[noreturn]] void block_error(std::string_view what, const GgmlTypeInfo& info, int64_t r,
                              int64_t blk, const char* why) {
  fail(what, ": ", info.name, " row ", r, " block ", blk, " ", why);
}

}  // namespace

std::optional<quant::Format> repack_format(GgmlType t) {
  if (auto n = native_format(t)) return n;
  if (auto s = affine_spec(t)) return quant::Format::affine(s->bits, s->group_size, DType::F32);
  if (t == GgmlType::kMXFP4) return quant::Format::fp(quant::Mode::kMxfp4);
  if (auto dt = float_dtype(t)) return quant::Format::dense(*dt);
  return std::nullopt;
}

const char* repack_unsupported_reason(GgmlType t) {
  if (repack_format(t)) return nullptr;
  return "the type has no dequantization in moex to check a repack against";
}

quant::QuantizedMatrix repack(GgmlType t, const uint8_t* src, uint64_t src_bytes, int64_t rows,
                              int64_t k, std::string_view what) {
  const GgmlTypeInfo& info = ggml_info(t);
  const std::optional<quant::Format> f = repack_format(t);
  if (!f) fail(what, ": ggml type ", info.name, " cannot be repacked losslessly into moex's formats: ",
               repack_unsupported_reason(t));
  if (k <= 0 || k % info.block_elems != 0)
    fail(what, ": rows of ", k, " elements are not a positive whole number of ", info.name, "'s ",
         info.block_elems, "-element blocks");
  if (rows < 0) fail(what, ": rows=", rows, " must be >= 0");
  const int64_t blocks = k / info.block_elems;  // per row
  const uint64_t row_src = uint64_t(blocks) * uint64_t(info.block_bytes);
  if (uint64_t(rows) > (uint64_t(1) << 62) / row_src || src_bytes != uint64_t(rows) * row_src)
    fail(what, ": ", rows, " rows of ", k, " ", info.name, " elements take ", uint64_t(rows) * row_src,
         " bytes but ", src_bytes, " were given");

  if (native_format(t)) return native_repack(t, src, rows, k);
  quant::QuantizedMatrix m;
  m.mode = f->mode;
  m.bits = f->bits;
  m.group_size = f->group_size;
  m.sb_dtype = f->scale_dtype;
  m.rows = rows;
  m.k = k;
  const int64_t row_bytes = quant::packed_row_bytes(k, f->bits);
  m.packed.assign(size_t((rows * row_bytes + 3) / 4), 0u);
  auto* packed = reinterpret_cast<uint8_t*>(m.packed.data());
  if (!f->quantized()) {  // F32 / F16 / BF16: the same little-endian bytes, row by row
    if (rows > 0) std::memcpy(packed, src, size_t(src_bytes));
    return m;
  }
  const int64_t groups = f->groups(k);  // per row
  m.scales.assign(size_t(rows * groups) * dtype_size(f->scale_dtype), 0);
  if (t == GgmlType::kMXFP4) {
    // One E8M0 byte e then 16 bytes of E2M1 nibbles in ggml's order. ggml's 2^(e-128) times
    // the doubled value is moex's 2^(e-127) times the value; ggml's code 8 ("-0") is +0, so it
    // becomes code 0. e = 255 is NaN in moex (and in the OCP format) but 2^127 in ggml.
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t bl = 0; bl < blocks; ++bl) {
        const uint8_t* b = src + r * int64_t(row_src) + bl * info.block_bytes;
        if (b[0] == 255)
          block_error(what, info, r, bl,
                      "has the exponent byte 255: ggml reads it as 2^127, moex's mxfp4 as NaN");
        m.scales[size_t(r * groups + bl)] = b[0];
        for (int i = 0; i < 32; ++i) {
          const uint32_t c = rp_nib32(b + 1, i);
          quant::insert_q(packed + r * row_bytes, bl * 32 + i, 4, c == 8 ? 0u : c);
        }
      }
    }
    return m;
  }
  m.biases.assign(m.scales.size(), 0);
  const AffineSpec spec = *affine_spec(t);
  const int block_groups = info.block_elems / spec.group_size;
  AffineBlock ab{};
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* dst = packed + r * row_bytes;
    for (int64_t bl = 0; bl < blocks; ++bl) {
      if (const char* why = spec.fn(src + r * int64_t(row_src) + bl * info.block_bytes, &ab))
        block_error(what, info, r, bl, why);
      const int64_t e0 = bl * info.block_elems;
      for (int i = 0; i < info.block_elems; ++i) quant::insert_q(dst, e0 + i, spec.bits, ab.q[i]);
      const size_t g0 = size_t(r * groups + bl * block_groups);
      std::memcpy(m.scales.data() + 4 * g0, ab.scale, 4 * size_t(block_groups));
      std::memcpy(m.biases.data() + 4 * g0, ab.bias, 4 * size_t(block_groups));
    }
  }
  return m;
}

}  // namespace moex::gguf
