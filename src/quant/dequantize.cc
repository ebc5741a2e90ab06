// mx.dequantize (affine) re-implemented bit for bit: q * scale then + bias, each rounded to
// the scales' dtype, then cast to the requested output dtype. Also the view validation.
// Built with -ffp-contract=off so the F32 product is rounded before the bias is added.
#include "quant/dequantize.h"

#include "core/error.h"
#include "core/parallel.h"
#include "quant/fp_codes.h"
#include "quant/ggml_groups.h"
#include "quant/mlx_round.h"

namespace moex::quant {

float dequantize_value(uint32_t q, float scale, float bias, DType sb_dtype) {
  const float p = detail::mlx_round(float(q) * scale, sb_dtype);
  return detail::mlx_round(p + bias, sb_dtype);
}

float fp_dequantize_value(float element, uint8_t scale_code, Mode mode, DType out_dtype) {
  const float scale = mode == Mode::kNvfp4 ? e4m3_to_f32(scale_code) : e8m0_to_f32(scale_code);
  return detail::mlx_round(element * detail::mlx_round(scale, out_dtype), out_dtype);
}

void check_view(const QuantMatrixView& v, std::string_view what) {
  if (v.mode == Mode::kFloat) {
    if (const char* why = format_unsupported_reason(v.format()))
      fail(what, ": ", why, " (got ", dtype_name(v.sb_dtype), ", bits=", v.bits, ")");
    if (v.k <= 0) fail(what, ": k=", v.k, " must be positive");
    if (v.rows < 0) fail(what, ": rows=", v.rows, " must be >= 0");
    if (v.rows > 0 && v.w == nullptr) fail(what, ": weights must be present");
    return;
  }
  if (is_ggml_mode(v.mode)) {
    if (const char* why = format_unsupported_reason(v.format(), v.k))
      fail(what, ": ", why, " (got ", mode_name(v.mode), " bits=", v.bits, " group_size=",
           v.group_size, " k=", v.k, ")");
  } else if (is_fp_mode(v.mode)) {
    if (const char* why = format_unsupported_reason(v.format()))
      fail(what, ": ", why, " (got bits=", v.bits, " group_size=", v.group_size, " scales ",
           dtype_name(v.sb_dtype), ")");
  } else {
    if (!is_valid_bits(v.bits))
      fail(what, ": bits=", v.bits, " is not supported (expected 2, 3, 4, 5, 6 or 8)");
    if (!is_valid_group_size(v.group_size))
      fail(what, ": group_size=", v.group_size, " is not supported (expected 32, 64 or 128)");
    if (!is_float_dtype(v.sb_dtype))
      fail(what, ": scales/biases dtype ", dtype_name(v.sb_dtype), " is not F32, F16 or BF16");
  }
  if (v.k <= 0 || v.k % v.group_size != 0)
    fail(what, ": k=", v.k, " must be a positive multiple of group_size=", v.group_size);
  if (v.rows < 0) fail(what, ": rows=", v.rows, " must be >= 0");
  if (v.rows > 0 && (v.w == nullptr || v.scales == nullptr))
    fail(what, ": packed weights and scales must be present");
  if (v.rows > 0 && v.mode == Mode::kAffine && v.biases == nullptr)
    fail(what, ": affine biases must be present");
}

namespace {

// Row r of an fp-mode view in out_dtype, each value widened to f32 (exact).
void fp_dequantize_row(const QuantMatrixView& v, int64_t r, DType out_dtype, float* out) {
  const uint8_t* row = v.row(r);
  const uint8_t* codes = static_cast<const uint8_t*>(v.scales) + v.sb_offset(r);
  for (int64_t i = 0; i < v.k; ++i) {
    const float e = v.bits == 4 ? kE2m1Values[extract_q(row, i, 4)] : e4m3_to_f32(row[i]);
    out[i] = fp_dequantize_value(e, codes[i / v.group_size], v.mode, out_dtype);
  }
}

}  // namespace

void dequantize_row(const QuantMatrixView& v, int64_t r, float* out) {
  if (v.mode == Mode::kFloat) {  // the elements widened (exact)
    const void* row = v.row(r);
    for (int64_t i = 0; i < v.k; ++i) out[i] = load_as_f32(row, v.sb_dtype, size_t(i));
    return;
  }
  if (is_fp_mode(v.mode)) {
    fp_dequantize_row(v, r, DType::F32, out);
    return;
  }
  if (is_ggml_mode(v.mode)) {  // ggml's own arithmetic, in f32 (quant/ggml_groups.h)
    const uint8_t* row = v.row(r);
    const uint8_t* blob = v.scale_row(r);
    for (int64_t g = 0; g < v.groups_per_row(); ++g) {
      const GgmlGroup grp = ggml_group(v.format(), blob, v.k, g);
      for (int64_t i = g * v.group_size; i < (g + 1) * v.group_size; ++i)
        out[i] = ggml_value(grp, extract_q(row, i, v.bits));
    }
    return;
  }
  const uint8_t* row = v.row(r);
  const int64_t g0 = v.sb_offset(r);
  const int64_t groups = v.groups_per_row();
  for (int64_t g = 0; g < groups; ++g) {
    const float s = load_as_f32(v.scales, v.sb_dtype, size_t(g0 + g));
    const float b = load_as_f32(v.biases, v.sb_dtype, size_t(g0 + g));
    const int64_t base = g * v.group_size;
    for (int j = 0; j < v.group_size; ++j)
      out[base + j] = dequantize_value(extract_q(row, base + j, v.bits), s, b, v.sb_dtype);
  }
}

void dequantize_row(const QuantMatrixView& v, int64_t r, void* out, DType out_dtype) {
  if (out_dtype == DType::F32) {
    dequantize_row(v, r, static_cast<float*>(out));
    return;
  }
  std::vector<float> tmp(size_t(v.k));
  if (is_fp_mode(v.mode)) {
    // MLX computes the fp modes in the output dtype itself (the scale is rounded to it first).
    fp_dequantize_row(v, r, out_dtype, tmp.data());
  } else {
    dequantize_row(v, r, tmp.data());
  }
  // Every value is exact in sb_dtype, so widening to f32 and rounding once to out_dtype is
  // MLX's astype (bf16 <-> f16 go through f32 there too).
  for (int64_t i = 0; i < v.k; ++i) detail::mlx_store(out, out_dtype, size_t(i), tmp[size_t(i)]);
}

void dequantize(const QuantMatrixView& v, void* out, DType out_dtype) {
  check_view(v, "dequantize");
  if (!is_float_dtype(out_dtype))
    fail("dequantize: output dtype ", dtype_name(out_dtype), " is not F32, F16 or BF16");
  const size_t esz = dtype_size(out_dtype);
  parallel_for(v.rows, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r)
      dequantize_row(v, r, static_cast<uint8_t*>(out) + size_t(r * v.k) * esz, out_dtype);
  });
}

std::vector<float> dequantize_f32(const QuantMatrixView& v) {
  check_view(v, "dequantize");
  std::vector<float> out(size_t(v.rows * v.k));
  dequantize(v, out.data(), DType::F32);
  return out;
}

}  // namespace moex::quant
