// The ggml type table (sizes from ggml-common.h's block structs; docs/gguf.md).
#include "io/gguf/ggml_type.h"

#include <iterator>

namespace moex::gguf {
namespace {

constexpr int kQK = 256;  // elements of one "K" super-block

// {type, name, elements per block, bytes per block, dequantizable}
constexpr GgmlTypeInfo kTypes[] = {
    {GgmlType::kF32, "F32", 1, 4, true},
    {GgmlType::kF16, "F16", 1, 2, true},
    {GgmlType::kQ4_0, "Q4_0", 32, 2 + 16, true},
    {GgmlType::kQ4_1, "Q4_1", 32, 2 + 2 + 16, true},
    {GgmlType::kQ5_0, "Q5_0", 32, 2 + 4 + 16, true},
    {GgmlType::kQ5_1, "Q5_1", 32, 2 + 2 + 4 + 16, true},
    {GgmlType::kQ8_0, "Q8_0", 32, 2 + 32, true},
    {GgmlType::kQ8_1, "Q8_1", 32, 4 + 4 + 32, false},
    {GgmlType::kQ2_K, "Q2_K", kQK, kQK / 16 + kQK / 4 + 2 + 2, true},
    {GgmlType::kQ3_K, "Q3_K", kQK, kQK / 8 + kQK / 4 + 12 + 2, true},
    {GgmlType::kQ4_K, "Q4_K", kQK, 2 + 2 + 12 + kQK / 2, true},
    {GgmlType::kQ5_K, "Q5_K", kQK, 2 + 2 + 12 + kQK / 8 + kQK / 2, true},
    {GgmlType::kQ6_K, "Q6_K", kQK, kQK / 2 + kQK / 4 + kQK / 16 + 2, true},
    {GgmlType::kQ8_K, "Q8_K", kQK, 4 + kQK + kQK / 8, false},
    {GgmlType::kIQ2_XXS, "IQ2_XXS", kQK, 2 + kQK / 4, false},
    {GgmlType::kIQ2_XS, "IQ2_XS", kQK, 2 + kQK / 4 + kQK / 32, false},
    {GgmlType::kIQ3_XXS, "IQ3_XXS", kQK, 2 + kQK / 4 + kQK / 8, false},
    {GgmlType::kIQ1_S, "IQ1_S", kQK, 2 + kQK / 8 + kQK / 16, false},
    {GgmlType::kIQ4_NL, "IQ4_NL", 32, 2 + 16, true},
    {GgmlType::kIQ3_S, "IQ3_S", kQK, 2 + kQK / 4 + kQK / 8 + kQK / 32 + 4, false},
    {GgmlType::kIQ2_S, "IQ2_S", kQK, 2 + kQK / 4 + kQK / 16, false},
    {GgmlType::kIQ4_XS, "IQ4_XS", kQK, 2 + 2 + kQK / 64 + kQK / 2, true},
    {GgmlType::kI8, "I8", 1, 1, false},
    {GgmlType::kI16, "I16", 1, 2, false},
    {GgmlType::kI32, "I32", 1, 4, false},
    {GgmlType::kI64, "I64", 1, 8, false},
    {GgmlType::kF64, "F64", 1, 8, false},
    {GgmlType::kIQ1_M, "IQ1_M", kQK, kQK / 8 + kQK / 16 + kQK / 32, false},
    {GgmlType::kBF16, "BF16", 1, 2, true},
    {GgmlType::kTQ1_0, "TQ1_0", kQK, 2 + 4 * 13, false},
    {GgmlType::kTQ2_0, "TQ2_0", kQK, 2 + 64, false},
    {GgmlType::kMXFP4, "MXFP4", 32, 1 + 16, true},
};

}  // namespace

std::optional<GgmlTypeInfo> ggml_type_info(uint32_t id) {
  for (const GgmlTypeInfo& t : kTypes)
    if (uint32_t(t.type) == id) return t;
  return std::nullopt;
}

const GgmlTypeInfo& ggml_info(GgmlType t) {
  for (const GgmlTypeInfo& e : kTypes)
    if (e.type == t) return e;
  return kTypes[0];  // unreachable: every enumerator has a row (ggml_type_test checks it)
}

const char* ggml_type_name(GgmlType t) { return ggml_info(t).name; }

std::string ggml_type_names() {
  std::string s;
  for (const GgmlTypeInfo& t : kTypes) s += (s.empty() ? "" : ", ") + std::string(t.name);
  return s;
}

std::optional<uint64_t> ggml_nbytes(GgmlType t, uint64_t row_elems, uint64_t elems) {
  const GgmlTypeInfo& info = ggml_info(t);
  const uint64_t block = uint64_t(info.block_elems);
  if (row_elems % block != 0 || elems % block != 0) return std::nullopt;
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(elems / block, uint64_t(info.block_bytes), &bytes)) return std::nullopt;
  return bytes;
}

}  // namespace moex::gguf
