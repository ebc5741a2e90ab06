// dtype names/sizes and IEEE half conversion.
#include "core/dtype.h"

#include <cmath>

namespace moex {
namespace {
struct DTypeInfo {
  DType t;
  const char* name;
  size_t size;
};
constexpr DTypeInfo kInfo[] = {
    {DType::F64, "F64", 8},   {DType::F32, "F32", 4},         {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2}, {DType::I64, "I64", 8},         {DType::I32, "I32", 4},
    {DType::I16, "I16", 2},   {DType::I8, "I8", 1},           {DType::U64, "U64", 8},
    {DType::U32, "U32", 4},   {DType::U16, "U16", 2},         {DType::U8, "U8", 1},
    {DType::BOOL, "BOOL", 1}, {DType::F8_E4M3, "F8_E4M3", 1}, {DType::F8_E5M2, "F8_E5M2", 1},
};
}  // namespace

size_t dtype_size(DType t) { return kInfo[static_cast<int>(t)].size; }
const char* dtype_name(DType t) { return kInfo[static_cast<int>(t)].name; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& i : kInfo)
    if (name == i.name) return i.t;
  return std::nullopt;
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t u;
  if (exp == 0) {
    if (mant == 0) {
      u = sign;
    } else {  // subnormal: value = mant * 2^-24
      float f = std::ldexp(float(mant), -24);
      std::memcpy(&u, &f, 4);
      u |= sign;
    }
  } else if (exp == 31) {
    u = sign | 0x7f800000u | (mant << 13);
  } else {
    u = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t f32_to_f16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint16_t sign = uint16_t((u >> 16) & 0x8000);
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00;   // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00;  // rounds to >= 65520 -> inf
  if (abs < 0x38800000u) {                       // below the smallest normal half: subnormal
    // value / 2^-24, rounded half to even
    float scaled = std::ldexp(std::fabs(f), 24);
    float r = std::nearbyint(scaled);  // default rounding mode is to-nearest-even
    return sign | uint16_t(r);
  }
  uint32_t mant = abs & 0x7fffff;
  uint32_t exp = (abs >> 23) - 112;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;
  return sign | uint16_t(h);
}

}  // namespace moex
