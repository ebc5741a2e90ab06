// The ggml tensor types a GGUF file may name: one table of id, name, elements per block and
// bytes per block (docs/gguf.md), and the byte size of a tensor computed from it with
// overflow checks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace moex::gguf {

// ggml's type ids (the numbers stored in a GGUF tensor info). Ids 4, 5, 31-33 and 36-38
// belonged to types ggml has removed; files naming them are refused like any unknown id.
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
};

struct GgmlTypeInfo {
  GgmlType type;
  const char* name;     // ggml's spelling: "F32", "Q4_K", "MXFP4", ...
  int block_elems;      // elements per block (1 for the plain types)
  int block_bytes;      // bytes per block
  bool dequantizable;   // gguf::dequantize_row handles it
};

// The table entry for a stored id; nullopt for an id that is not a ggml type moex knows.
std::optional<GgmlTypeInfo> ggml_type_info(uint32_t id);
// The entry for a type of the enum (always present).
const GgmlTypeInfo& ggml_info(GgmlType t);
const char* ggml_type_name(GgmlType t);
// Every type of the table, for messages: "F32, F16, Q4_0, ...".
std::string ggml_type_names();

// Bytes of a tensor of `elems` elements whose rows are `row_elems` long: nullopt when the
// row is not a whole number of blocks or the byte count overflows 64 bits.
std::optional<uint64_t> ggml_nbytes(GgmlType t, uint64_t row_elems, uint64_t elems);

}  // namespace moex::gguf
