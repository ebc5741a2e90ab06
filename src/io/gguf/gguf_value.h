// GGUF metadata values: the 13 value types of the format and one Value holding a scalar, a
// string or an array (of scalars, strings or further arrays). Strings and fixed-size array
// elements point into the file's mapping, so a Value lives no longer than its GgufFile.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace moex::gguf {

// The format's value type ids, as stored in the file.
enum class ValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

// "uint8", "int8", ..., "float32", "bool", "string", "array", "uint64", "int64", "float64".
const char* value_type_name(ValueType t);
std::optional<ValueType> value_type_from_id(uint32_t id);
// Bytes of one stored scalar of type t; 0 for kString and kArray (variable length).
int value_type_size(ValueType t);
bool is_integer_type(ValueType t);
bool is_float_type(ValueType t);

struct Value {
  ValueType type = ValueType::kU8;
  // Scalars: the stored little-endian bytes, zero-extended (read them with the functions below).
  uint64_t bits = 0;
  // kString: the bytes (not checked to be UTF-8; the format does not say they must be).
  std::string_view str;
  // kArray: the element type and count, then the elements where they are: fixed-size
  // elements as count * value_type_size(elem_type) bytes of the file, strings as views,
  // nested arrays as Values.
  ValueType elem_type = ValueType::kU8;
  uint64_t count = 0;
  const uint8_t* elems = nullptr;
  std::vector<std::string_view> strings;
  std::vector<Value> arrays;

  // An integer scalar as int64 (nullopt for a uint64 above INT64_MAX or a non-integer).
  std::optional<int64_t> as_int() const;
  // A float32 / float64 scalar widened to double (exact); nullopt for other types.
  std::optional<double> as_float() const;
  // Element i (< count) of an array of a fixed-size type, as a scalar Value.
  Value scalar_element(uint64_t i) const;
};

// A value as text for listings: numbers in full (floats with %.9g / %.17g), strings quoted
// and clipped to 120 bytes with non-printable bytes escaped, arrays as
// "[a, b, c, ... (N elements)]" showing at most max_elems elements.
std::string value_to_string(const Value& v, size_t max_elems = 8);
// "uint32", "string", "array<float32>", "array<array<int8>>": a value's type for messages.
std::string value_type_text(const Value& v);

}  // namespace moex::gguf
