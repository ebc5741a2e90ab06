// Shape check for one quantized checkpoint tensor (P.weight U32 [..., words], P.scales /
// P.biases [..., groups]): validates them against the config's bits/group_size, or infers
// bits and group_size when the config is silent. The fp modes (mode mxfp4 / mxfp8 / nvfp4)
// have U8 scales, no biases and their mode's fixed bits and group size. Loaders call it
// before trusting a checkpoint; every error names the tensor.
//
// The relation MLX enforces (mx.dequantize, quantized_matmul, gather_qmm):
//   k = words * 32 / bits   and   k = groups * group_size,
// plus equal leading dimensions for weight/scales/biases. moex is stricter than MLX's
// integer division: words * 32 must be an exact multiple of bits, and k a multiple of 32.
//
// Inference rule when bits and/or group_size are absent:
//   - one of them given: the other follows from the relation (must be exact and valid);
//   - neither given, logical k known (from the model config, e.g. hidden size): mlx-lm's
//     rule, bits = words * 32 / k and group_size = k / groups (both exact and valid);
//   - neither given, k unknown: MLX's own defaults when bits/group_size are None
//     (affine: bits 4, group_size 64) if they satisfy the relation; otherwise the single
//     (bits, group_size) pair in {2,3,4,5,6,8} x {32,64,128} that satisfies it. When several
//     pairs fit and the defaults do not (words*32/groups = bits*group_size in {128, 192,
//     384, 512}), the shape is ambiguous and an Error lists the candidates.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "quant/format.h"

namespace moex::quant {

struct QuantShapeArgs {
  std::string_view tensor;              // module path or tensor name, used in every error
  std::vector<int64_t> weight_shape;    // packed, [..., words]
  std::vector<int64_t> scales_shape;    // [..., groups]
  std::vector<int64_t> biases_shape;    // must equal scales_shape (affine has biases)
  std::optional<int> bits;              // from config.json "quantization" when present
  std::optional<int> group_size;
  std::optional<int64_t> k;             // logical input width, when the caller knows it
  std::optional<std::string> mode;      // config "mode": affine (default), mxfp4, mxfp8, nvfp4
  std::optional<DType> weight_dtype;    // checked when given: U32
  std::optional<DType> scales_dtype;    // checked when given: F32/F16/BF16
  std::optional<DType> biases_dtype;    // checked when given: equal to scales_dtype
};

struct QuantShape {
  Mode mode = Mode::kAffine;
  int bits = 0, group_size = 0;
  int64_t k = 0;       // logical input width
  int64_t words = 0;   // packed uint32 words per row
  int64_t groups = 0;  // scales per row
  int64_t rows = 0;    // product of the leading dimensions
  std::vector<int64_t> leading;  // the leading dimensions (e.g. {experts, n})
  bool inferred = false;         // bits or group_size did not come from the caller
};

QuantShape check_quant_shape(const QuantShapeArgs& a);

// mlx-lm's infer_quant_config (mlx_lm/utils.py): the format a module's packed shapes imply for
// logical input width k: group_size = k / scales columns, bits = weight columns * 32 / k; U8
// scales mean the fp mode of that pair, other scale dtypes affine. Nullopt when the shapes imply
// no whole, supported format (the caller then falls back to the config's setting).
std::optional<Format> infer_packed_format(const std::vector<int64_t>& weight_shape,
                                          const std::vector<int64_t>& scales_shape,
                                          DType scales_dtype, int64_t k);

}  // namespace moex::quant
