// Element types of tensors (the safetensors set) and f16/bf16 <-> f32 conversion.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace moex {

enum class DType : uint8_t { F64, F32, F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8, BOOL, F8_E4M3, F8_E5M2 };

size_t dtype_size(DType t);
const char* dtype_name(DType t);  // safetensors spelling: "F32", "BF16", ...
std::optional<DType> dtype_from_name(std::string_view name);

inline float bf16_to_f32(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest even, NaN stays NaN (as MLX / PyTorch do).
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);  // round to nearest even, overflow -> inf

// Reads element i of a float-typed buffer (F32, F16 or BF16) as f32. Through memcpy: a
// safetensors data area need not be 2- or 4-byte aligned, and the format allows that.
inline float load_as_f32(const void* p, DType t, size_t i) {
  const auto* b = static_cast<const unsigned char*>(p);
  switch (t) {
    case DType::F32: {
      float f;
      std::memcpy(&f, b + 4 * i, 4);
      return f;
    }
    case DType::BF16:
    case DType::F16: {
      uint16_t h;
      std::memcpy(&h, b + 2 * i, 2);
      return t == DType::BF16 ? bf16_to_f32(h) : f16_to_f32(h);
    }
    default: return 0.f;
  }
}

// Writes f32 value v as element i of a float-typed buffer (F32, F16 or BF16), as above.
inline void store_from_f32(void* p, DType t, size_t i, float v) {
  auto* b = static_cast<unsigned char*>(p);
  switch (t) {
    case DType::F32: std::memcpy(b + 4 * i, &v, 4); break;
    case DType::BF16:
    case DType::F16: {
      const uint16_t h = t == DType::BF16 ? f32_to_bf16(v) : f32_to_f16(v);
      std::memcpy(b + 2 * i, &h, 2);
      break;
    }
    default: break;
  }
}

inline bool is_float_dtype(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

}  // namespace moex
