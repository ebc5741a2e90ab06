// GGUF metadata values: type names and sizes, scalar reads, and text for listings.
#include "io/gguf/gguf_value.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace moex::gguf {

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::kU8: return "uint8";
    case ValueType::kI8: return "int8";
    case ValueType::kU16: return "uint16";
    case ValueType::kI16: return "int16";
    case ValueType::kU32: return "uint32";
    case ValueType::kI32: return "int32";
    case ValueType::kF32: return "float32";
    case ValueType::kBool: return "bool";
    case ValueType::kString: return "string";
    case ValueType::kArray: return "array";
    case ValueType::kU64: return "uint64";
    case ValueType::kI64: return "int64";
    case ValueType::kF64: return "float64";
  }
  return "?";
}

std::optional<ValueType> value_type_from_id(uint32_t id) {
  if (id > uint32_t(ValueType::kF64)) return std::nullopt;
  return ValueType(id);
}

int value_type_size(ValueType t) {
  switch (t) {
    case ValueType::kU8:
    case ValueType::kI8:
    case ValueType::kBool: return 1;
    case ValueType::kU16:
    case ValueType::kI16: return 2;
    case ValueType::kU32:
    case ValueType::kI32:
    case ValueType::kF32: return 4;
    case ValueType::kU64:
    case ValueType::kI64:
    case ValueType::kF64: return 8;
    case ValueType::kString:
    case ValueType::kArray: return 0;
  }
  return 0;
}

bool is_integer_type(ValueType t) {
  switch (t) {
    case ValueType::kU8:
    case ValueType::kI8:
    case ValueType::kU16:
    case ValueType::kI16:
    case ValueType::kU32:
    case ValueType::kI32:
    case ValueType::kU64:
    case ValueType::kI64: return true;
    default: return false;
  }
}

bool is_float_type(ValueType t) { return t == ValueType::kF32 || t == ValueType::kF64; }

std::optional<int64_t> Value::as_int() const {
  switch (type) {
    case ValueType::kU8:
    case ValueType::kU16:
    case ValueType::kU32: return int64_t(bits);
    case ValueType::kI8: return int64_t(int8_t(uint8_t(bits)));
    case ValueType::kI16: return int64_t(int16_t(uint16_t(bits)));
    case ValueType::kI32: return int64_t(int32_t(uint32_t(bits)));
    case ValueType::kI64: return int64_t(bits);
    case ValueType::kU64:
      if (bits > uint64_t(INT64_MAX)) return std::nullopt;
      return int64_t(bits);
    default: return std::nullopt;
  }
}

std::optional<double> Value::as_float() const {
  if (type == ValueType::kF32) {
    float f;
    const uint32_t u = uint32_t(bits);
    std::memcpy(&f, &u, 4);
    return double(f);
  }
  if (type == ValueType::kF64) {
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }
  return std::nullopt;
}

Value Value::scalar_element(uint64_t i) const {
  Value v;
  v.type = elem_type;
  const int size = value_type_size(elem_type);
  std::memcpy(&v.bits, elems + i * uint64_t(size), size_t(size));  // little-endian host
  return v;
}

namespace {

std::string quoted(std::string_view s) {
  std::string out = "\"";
  const size_t n = s.size() < 120 ? s.size() : 120;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  out += '"';
  if (n < s.size()) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

std::string scalar_text(const Value& v) {
  char buf[64];
  if (v.type == ValueType::kBool) return v.bits ? "true" : "false";
  if (v.type == ValueType::kF32) {
    std::snprintf(buf, sizeof buf, "%.9g", *v.as_float());
    return buf;
  }
  if (v.type == ValueType::kF64) {
    std::snprintf(buf, sizeof buf, "%.17g", *v.as_float());
    return buf;
  }
  if (v.type == ValueType::kU64) {
    std::snprintf(buf, sizeof buf, "%" PRIu64, v.bits);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%" PRId64, v.as_int().value_or(0));
  return buf;
}

}  // namespace

std::string value_type_text(const Value& v) {
  if (v.type != ValueType::kArray) return value_type_name(v.type);
  if (v.elem_type == ValueType::kArray)
    return "array<" + (v.arrays.empty() ? std::string("array") : value_type_text(v.arrays[0])) + ">";
  return std::string("array<") + value_type_name(v.elem_type) + ">";
}

std::string value_to_string(const Value& v, size_t max_elems) {
  if (v.type == ValueType::kString) return quoted(v.str);
  if (v.type != ValueType::kArray) return scalar_text(v);
  std::string out = "[";
  const uint64_t shown = v.count < max_elems ? v.count : max_elems;
  for (uint64_t i = 0; i < shown; ++i) {
    if (i) out += ", ";
    if (v.elem_type == ValueType::kString)
      out += quoted(v.strings[i]);
    else if (v.elem_type == ValueType::kArray)
      out += value_to_string(v.arrays[i], max_elems);
    else
      out += scalar_text(v.scalar_element(i));
  }
  if (shown < v.count) out += (shown ? ", ... (" : "... (") + std::to_string(v.count) + " elements)";
  return out + "]";
}

}  // namespace moex::gguf
