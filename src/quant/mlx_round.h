// Float rounding to F16/BF16 exactly as MLX's CPU types do it: round to nearest even like
// core/dtype.h, but NaN encoded as MLX encodes it (bf16: 0x7FC0 whatever the sign; f16:
// sign | 0x7D00; f16 NaN widened with the quiet bit set), so NaN-producing corner cases
// (0 * inf after a scale overflowed) stay bit-identical too.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/dtype.h"

namespace moex::quant::detail {

inline uint16_t mlx_f32_to_bf16(float f) {
  if (f != f) return 0x7fc0;
  return f32_to_bf16(f);
}

inline uint16_t mlx_f32_to_f16(float f) {
  if (f != f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return uint16_t(((u >> 16) & 0x8000u) | 0x7d00u);
  }
  return f32_to_f16(f);
}

// f16 -> f32; a NaN keeps its sign and payload and gains the quiet bit, as MLX's widening
// (a multiply that quiets the NaN) produces.
inline float mlx_f16_to_f32(uint16_t h) {
  if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0) {
    const uint32_t u = (uint32_t(h & 0x8000u) << 16) | 0x7fc00000u | (uint32_t(h & 0x3ffu) << 13);
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  return f16_to_f32(h);
}

// f rounded to t (F32, F16 or BF16) and widened back to f32.
inline float mlx_round(float f, DType t) {
  switch (t) {
    case DType::BF16: return bf16_to_f32(mlx_f32_to_bf16(f));
    case DType::F16: return mlx_f16_to_f32(mlx_f32_to_f16(f));
    default: return f;
  }
}

// Stores f as element i of a t-typed buffer (MLX's astype from f32).
inline void mlx_store(void* p, DType t, size_t i, float f) {
  switch (t) {
    case DType::F32: static_cast<float*>(p)[i] = f; break;
    case DType::BF16: static_cast<uint16_t*>(p)[i] = mlx_f32_to_bf16(f); break;
    case DType::F16: static_cast<uint16_t*>(p)[i] = mlx_f32_to_f16(f); break;
    default: break;
  }
}

}  // namespace moex::quant::detail
