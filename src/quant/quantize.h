// MLX quantization of float rows, bit-identical to mx.quantize (mlx 0.32.4, CPU): affine
// (below) and the fp modes mxfp4 / mxfp8 / nvfp4 (fp_quantize.cc, docs/quant_formats.md).
// Affine:
// Per group of group_size consecutive values, in f32 (inputs are widened exactly):
//   max, min over the group; mask = |min| > |max|;
//   scale = max((max - min) / (2^bits - 1), 1e-7f), negated unless mask;
//   edge = mask ? min : max;  q0 = rint(edge / scale);
//   if q0 != 0: scale = edge / q0, bias = edge (the edge is exact, 0 is representable);
//   else bias = 0;
//   q = clamp(rint((w - bias) / scale), 0, 2^bits - 1)   (rint: half to even);
// scale and bias are stored rounded (nearest even) to the input's dtype, like MLX.
// Consequences worth knowing: stored scales are negative whenever |max| >= |min|; the far
// edge can land one step outside the grid and clamp (error up to |scale|, not |scale|/2);
// NaN inputs are ignored by max/min and quantize to 0; a group spanning more than the f32
// range gets scale +-inf, bias 0 and q = 0 (its dequantized values are NaN, as in MLX).
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "quant/view.h"

namespace moex::quant {

struct QuantizeArgs {
  const void* data = nullptr;  // [rows][k] of dtype, row-major, contiguous
  DType dtype = DType::F32;    // F32, F16 or BF16; also the dtype of scales and biases
  int64_t rows = 0, k = 0;
  int bits = 4;                // 2, 3, 4, 5, 6 or 8 (affine); the mode's own (fp modes)
  int group_size = 64;         // 32, 64 or 128 (affine); 32 / 16 (mx / nv); must divide k
  Mode mode = Mode::kAffine;
};

// Throws moex::Error naming the parameter (bits, group_size, k, rows, dtype) when the
// arguments are not something mx.quantize accepts (and moex supports).
void check_quantize_args(const QuantizeArgs& a);

// Quantizes into caller-owned buffers: packed [rows][k*bits/32] uint32 words, scales and
// biases [rows][k/group_size] elements of a.dtype (affine) or scales [rows][k/group_size]
// U8 codes and no biases (fp modes: `biases` is ignored and may be null). Validates first
// (throws moex::Error).
void quantize_into(const QuantizeArgs& a, uint32_t* packed, void* scales, void* biases);

namespace detail {
// The fp-mode body of quantize_into (arguments already validated).
void fp_quantize_into(const QuantizeArgs& a, uint32_t* packed, uint8_t* scales);
}  // namespace detail

// Allocating form.
QuantizedMatrix quantize(const QuantizeArgs& a);

}  // namespace moex::quant
