// One quantized 2-D matrix [rows][k] in the MLX layout (docs/background.md §3,
// docs/quant_formats.md): a borrowed view (QuantMatrixView, the same fields as
// kernels::QuantWeightsView minus the expert axis) and an owning container (QuantizedMatrix)
// as produced by quant::quantize. Affine matrices have scales and biases in sb_dtype; the fp
// modes have one U8 scale code per group and no biases (biases == nullptr). An unquantized
// matrix is the same view with mode kFloat: w holds rows x k elements of sb_dtype (F32, F16
// or BF16), bits is their width, group_size 0, no scales or biases.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "quant/format.h"

namespace moex::quant {

struct QuantMatrixView {
  const uint8_t* w = nullptr;    // packed rows (kFloat: float rows); row r at w + r * row_bytes()
  const void* scales = nullptr;  // [rows][k / group_size], dtype sb_dtype; nullptr for kFloat
  const void* biases = nullptr;  // same shape and dtype as scales; nullptr for the fp modes
  DType sb_dtype = DType::BF16;  // F32, F16 or BF16 (affine); U8 (fp modes); elements (kFloat)
  int64_t rows = 0, k = 0;
  int bits = 4, group_size = 64;
  Mode mode = Mode::kAffine;

  Format format() const { return {mode, bits, group_size, sb_dtype}; }
  // An unquantized matrix: rows x k elements of `dtype` (F32, F16 or BF16) at w.
  static QuantMatrixView dense(const void* w, DType dtype, int64_t rows, int64_t k) {
    const Format f = Format::dense(dtype);
    QuantMatrixView v;
    v.w = static_cast<const uint8_t*>(w);
    v.sb_dtype = dtype;
    v.mode = f.mode;
    v.bits = f.bits;
    v.group_size = f.group_size;
    v.rows = rows;
    v.k = k;
    return v;
  }

  int64_t row_bytes() const { return packed_row_bytes(k, bits); }
  int64_t row_words() const { return packed_row_words(k, bits); }
  int64_t groups_per_row() const { return group_size > 0 ? k / group_size : 0; }  // 0: kFloat
  const uint8_t* row(int64_t r) const { return w + r * row_bytes(); }
  int64_t sb_offset(int64_t r) const { return r * groups_per_row(); }
  // Bytes of one row's scales (a ggml mode: its scale blob), and row r's first scale byte.
  int64_t scale_row_bytes() const { return format().scale_row_bytes(k); }
  const uint8_t* scale_row(int64_t r) const {
    return static_cast<const uint8_t*>(scales) + r * scale_row_bytes();
  }
  // Rows [r0, r0 + n) as a view of their own (a fused projection's q, k or v part). The
  // caller keeps 0 <= r0 and r0 + n <= rows.
  QuantMatrixView row_slice(int64_t r0, int64_t n) const {
    QuantMatrixView v = *this;
    const int64_t sb = r0 * scale_row_bytes();
    v.w = row(r0);
    if (scales) v.scales = static_cast<const uint8_t*>(scales) + sb;
    if (biases) v.biases = static_cast<const uint8_t*>(biases) + sb;
    v.rows = n;
    return v;
  }
};

// Throws moex::Error naming `what` and the offending field when the view's parameters are
// not a valid MLX quantized matrix (format, k divisibility, null pointers).
void check_view(const QuantMatrixView& v, std::string_view what);

// Owns the three arrays of one quantized matrix. scales/biases hold rows * groups elements
// of sb_dtype (the input's dtype, as in MLX), stored as raw little-endian bytes.
struct QuantizedMatrix {
  std::vector<uint32_t> packed;  // [rows][k * bits / 32]
  std::vector<uint8_t> scales;   // [rows][k / group_size] elements of sb_dtype
  std::vector<uint8_t> biases;   // empty for the fp modes
  DType sb_dtype = DType::F32;
  int64_t rows = 0, k = 0;
  int bits = 4, group_size = 64;
  Mode mode = Mode::kAffine;

  QuantMatrixView view() const {
    QuantMatrixView v;
    v.w = reinterpret_cast<const uint8_t*>(packed.data());
    v.scales = scales.data();
    v.biases = biases.empty() ? nullptr : biases.data();
    v.mode = mode;
    v.sb_dtype = sb_dtype;
    v.rows = rows;
    v.k = k;
    v.bits = bits;
    v.group_size = group_size;
    return v;
  }
  // Affine only: the stored scale and bias of group g of row r, widened to f32.
  float scale(int64_t r, int64_t g) const {
    return load_as_f32(scales.data(), sb_dtype, size_t(r * (k / group_size) + g));
  }
  float bias(int64_t r, int64_t g) const {
    return load_as_f32(biases.data(), sb_dtype, size_t(r * (k / group_size) + g));
  }
};

}  // namespace moex::quant
