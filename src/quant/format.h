// The MLX quantization formats (docs/quant_formats.md): the format value (mode, bits, group
// size, scale dtype, whether biases exist), valid bits / group sizes, packed row sizes, and
// extraction of one quantized value. For every width (2,3,4,5,6,8) a packed
// row is one little-endian, least-significant-bit-first bit stream: element i occupies bits
// [bits*i, bits*(i+1)). For 2/4/8 bits this is identical to MLX's "element i in word
// i/(32/bits) at offset bits*(i%(32/bits))" on a little-endian machine.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/dtype.h"

namespace moex::quant {

// MLX's quantization modes. Affine: w = scale * q + bias per group (2-8 bits, groups of
// 32/64/128, scales and biases in the model's float dtype). The microscaling float modes have
// no biases and one 8-bit scale per group: mxfp4 (E2M1 values, E8M0 scales, group 32), mxfp8
// (E4M3 values, E8M0 scales, group 32), nvfp4 (E2M1 values, E4M3 scales, group 16).
// kFloat is not an MLX mode but the same value for an unquantized matrix
// (docs/quant_formats.md, "Unquantized weights"): elements stored as F32, F16 or BF16, no
// groups, no scales, no biases.
// The three kGgml* modes are not MLX's: they hold ggml's block formats (GGUF files) in moex's
// layout, read at the bytes per weight of the file (docs/quant_formats.md, "ggml block modes"):
//   kGgmlQ0     w = d * (q - 2^(bits-1)): one F16 d per group of 32 (Q4_0, Q5_0, Q8_0);
//   kGgmlKMin   w = (d * sc) * q - dmin * m: per group an 8-bit scale code sc and min code m,
//               per super-block of 256 an F16 d and dmin (Q2_K group 16, Q4_K / Q5_K group 32);
//   kGgmlKZero  w = (d * sc) * (q - 2^(bits-1)): per group a signed 8-bit sc, per super-block
//               an F16 d (Q3_K, Q6_K: group 16; IQ4_XS as 8-bit codes, code book value + 128,
//               group 32).
// Their codes are packed like every other mode's (one bit stream per row); their scale codes
// live in one per-row blob (scales), laid out as ggml_scale_row_bytes says; no biases array.
enum class Mode : uint8_t { kAffine, kMxfp4, kMxfp8, kNvfp4, kFloat, kGgmlQ0, kGgmlKMin, kGgmlKZero };

// MLX's spelling: "affine", "mxfp4", "mxfp8", "nvfp4"; "float" for kFloat.
const char* mode_name(Mode m);
// The quantization modes a config's "mode" field may name (never kFloat); the ggml modes only
// with `ggml` (readers of GGUF-sourced models; nothing writes or quantizes into them).
std::optional<Mode> mode_from_name(std::string_view name, bool ggml = false);
constexpr bool is_fp_mode(Mode m) {
  return m == Mode::kMxfp4 || m == Mode::kMxfp8 || m == Mode::kNvfp4;
}
constexpr bool is_ggml_mode(Mode m) {
  return m == Mode::kGgmlQ0 || m == Mode::kGgmlKMin || m == Mode::kGgmlKZero;
}
// The group size of a ggml mode's member with `bits` (its only one): 32 for kGgmlQ0, 4- and
// 5-bit kGgmlKMin and 8-bit kGgmlKZero (IQ4_XS), else 16.
constexpr int ggml_group_size(Mode m, int bits) {
  return m == Mode::kGgmlQ0 || (m == Mode::kGgmlKMin && bits != 2) ||
                 (m == Mode::kGgmlKZero && bits == 8)
             ? 32
             : 16;
}
// Elements per super-block of the kGgmlK* modes (ggml's QK_K).
inline constexpr int64_t kGgmlSuperBlock = 256;
// Bytes of one row's scale blob in a ggml mode: kGgmlQ0: groups F16 d; kGgmlKMin: groups sc
// bytes, groups m bytes, then supers F16 d and supers F16 dmin; kGgmlKZero: groups signed sc
// bytes, then supers F16 d (supers = k / 256).
constexpr int64_t ggml_scale_row_bytes(Mode m, int64_t k, int group_size) {
  const int64_t groups = k / group_size, supers = k / kGgmlSuperBlock;
  return m == Mode::kGgmlQ0     ? 2 * groups
         : m == Mode::kGgmlKMin ? 2 * groups + 4 * supers
                                : groups + 2 * supers;
}
// ggml's name of a ggml-mode format ("q4_0", "q4_k", "q6_k", ...; "?" for another format).
const char* ggml_type_name(const struct Format& f);
// The only bits / group size an fp mode allows (MLX's defaults are its only values).
constexpr int fp_mode_bits(Mode m) { return m == Mode::kMxfp8 ? 8 : 4; }
constexpr int fp_mode_group_size(Mode m) { return m == Mode::kNvfp4 ? 16 : 32; }
// The fp mode whose only (bits, group size) this is, as mlx-lm infers a mode from U8 scales
// (4/32 mxfp4, 8/32 mxfp8, 4/16 nvfp4); nullopt for any other pair.
inline std::optional<Mode> fp_mode_for(int bits, int group_size) {
  for (Mode m : {Mode::kMxfp4, Mode::kMxfp8, Mode::kNvfp4})
    if (fp_mode_bits(m) == bits && fp_mode_group_size(m) == group_size) return m;
  return std::nullopt;
}

// One matrix's format: everything a kernel, a loader or a byte counter needs to know besides
// the shape. scale_dtype is F32/F16/BF16 for affine and U8 (the raw E8M0 or E4M3 code) for
// the fp modes; for kFloat it is the elements' own dtype (F32/F16/BF16), bits its width
// (32 or 16) and group_size 0 (no groups).
struct Format {
  Mode mode = Mode::kAffine;
  int bits = 4;
  int group_size = 64;
  DType scale_dtype = DType::BF16;

  bool has_biases() const { return mode == Mode::kAffine; }
  // Bytes of one row's scales (a ggml mode: its whole scale blob) and of its biases.
  int64_t scale_row_bytes(int64_t k) const {
    if (is_ggml_mode(mode)) return ggml_scale_row_bytes(mode, k, group_size);
    return quantized() ? groups(k) * int64_t(dtype_size(scale_dtype)) : 0;
  }
  int64_t bias_row_bytes(int64_t k) const { return has_biases() ? scale_row_bytes(k) : 0; }
  bool operator==(const Format& o) const {  // spelled out: nvcc's C++17 has no defaulted ==
    return mode == o.mode && bits == o.bits && group_size == o.group_size &&
           scale_dtype == o.scale_dtype;
  }
  static Format affine(int bits, int group_size, DType scale_dtype) {
    return {Mode::kAffine, bits, group_size, scale_dtype};
  }
  static Format fp(Mode m) { return {m, fp_mode_bits(m), fp_mode_group_size(m), DType::U8}; }
  static Format dense(DType element) { return {Mode::kFloat, int(dtype_size(element)) * 8, 0, element}; }
  // A ggml mode: kGgmlQ0's scales are F16, the K modes' blobs raw bytes (U8).
  static Format ggml(Mode m, int bits, int group_size) {
    return {m, bits, group_size, m == Mode::kGgmlQ0 ? DType::F16 : DType::U8};
  }
  // The format a quantization section names (mode, bits, group size): the scale dtype is the
  // mode's own (U8 codes for the fp modes, ggml()'s), or `affine_scales` for affine.
  static Format named(Mode m, int bits, int group_size, DType affine_scales) {
    if (is_ggml_mode(m)) return ggml(m, bits, group_size);
    return {m, bits, group_size, is_fp_mode(m) ? DType::U8 : affine_scales};
  }

  bool quantized() const { return mode != Mode::kFloat; }
  // Scale groups per row of k values (0 for kFloat).
  int64_t groups(int64_t k) const { return group_size > 0 ? k / group_size : 0; }
  // Bytes of one row of k values: packed codes or float elements, plus its scales and biases.
  int64_t row_bytes_with_scales(int64_t k) const {
    return k * bits / 8 + scale_row_bytes(k) + bias_row_bytes(k);
  }
};

// nullptr when f is a format moex supports, else a static description of what is wrong.
const char* format_unsupported_reason(const Format& f);
// The same for a row length k (k a positive multiple of the group size, and of 256 for the
// K modes).
const char* format_unsupported_reason(const Format& f, int64_t k);

inline constexpr int kValidBits[] = {2, 3, 4, 5, 6, 8};
inline constexpr int kValidGroupSizes[] = {32, 64, 128};  // affine

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
