// MLX dequantization, affine and fp modes. Affine: w = scale * q + bias, bit-identical to mx.dequantize (mlx 0.32.4,
// CPU). MLX computes in the dtype of the scales: q is cast to that dtype (exact), then
// p = round_sb(q * scale), w = round_sb(p + bias), each product/sum done in f32 and rounded
// to nearest even (for F32 scales: two separate f32 operations, never a fused multiply-add).
// A requested output dtype is a cast of that result (mx.dequantize(..., dtype=...)).
// NaN results (0 * an overflowed inf scale) carry MLX's NaN encodings (quant/mlx_round.h).
#pragma once

#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "quant/view.h"

namespace moex::quant {

// The fp modes (docs/quant_formats.md): element (the E2M1 or E4M3 value) times the group's
// scale (E8M0 or, for nvfp4, E4M3 code), both in out_dtype as mx.dequantize(..., dtype=)
// computes them: round(element * round(scale)), widened to f32.
float fp_dequantize_value(float element, uint8_t scale_code, Mode mode, DType out_dtype);

// One dequantized value as mx.dequantize computes it, returned widened to f32 (exact).
// scale and bias are the stored values (already representable in sb_dtype).
float dequantize_value(uint32_t q, float scale, float bias, DType sb_dtype);

// Row r of v dequantized into out[k] as f32 (the exact value of the sb-dtype result).
// Precondition: check_view(v) passed and r < v.rows. Does not throw.
void dequantize_row(const QuantMatrixView& v, int64_t r, float* out);

// Row r dequantized into out[k] elements of out_dtype (F32, F16 or BF16).
void dequantize_row(const QuantMatrixView& v, int64_t r, void* out, DType out_dtype);

// Whole matrix into out[rows][k] of out_dtype; validates v (throws moex::Error).
void dequantize(const QuantMatrixView& v, void* out, DType out_dtype);

// Whole matrix as f32 (equals mx.dequantize(..., dtype=mx.float32)).
std::vector<float> dequantize_f32(const QuantMatrixView& v);

}  // namespace moex::quant
