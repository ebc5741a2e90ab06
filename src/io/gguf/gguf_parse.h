// Parsing and validation of one GGUF file's bytes (header, metadata, tensor infos, data
// section), separate from the mapping so it can be checked on its own. Every count, length
// and offset is checked against the bytes that remain before anything is allocated; every
// error names the file, what was wrong and where (key, tensor, byte offset).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "io/gguf/ggml_type.h"
#include "io/gguf/gguf_value.h"

namespace moex::gguf {

// Limits (docs/config_limits.md, "GGUF files"). Each is far above any published model file
// and far below what would let a small hostile file ask for a large allocation.
inline constexpr uint64_t kMaxTensors = uint64_t{1} << 20;
inline constexpr uint64_t kMaxKeyValues = uint64_t{1} << 20;
inline constexpr uint64_t kMaxNameBytes = 4096;                 // keys and tensor names
inline constexpr uint64_t kMaxStringBytes = uint64_t{1} << 28;  // one string value: 256 MiB
inline constexpr int kMaxArrayDepth = 8;                        // array nesting levels
inline constexpr int kMaxDims = 4;                              // ggml's GGML_MAX_DIMS
inline constexpr uint64_t kMaxAlignment = uint64_t{1} << 16;
inline constexpr uint64_t kDefaultAlignment = 32;

// One tensor info. ne[] is GGUF's (ggml's) order: ne[0] is the fastest-varying (contiguous)
// dimension, so a matrix of `rows` rows of `cols` elements has ne = {cols, rows}; shape()
// reverses it into the row-major order of safetensors and numpy ([rows, cols]).
struct TensorInfo {
  std::string name;
  GgmlType type = GgmlType::kF32;
  int n_dims = 0;
  std::array<int64_t, kMaxDims> ne{1, 1, 1, 1};  // unused dimensions are 1
  uint64_t offset = 0;  // from the start of the data section (a multiple of the alignment)
  uint64_t nbytes = 0;
  uint64_t info_offset = 0;  // where the tensor info starts in the file, for messages

  int64_t numel() const { return ne[0] * ne[1] * ne[2] * ne[3]; }  // checked at parse
  std::vector<int64_t> shape() const;                               // [ne[n-1], ..., ne[0]]
};

struct KeyValue {
  std::string key;
  Value value;
  uint64_t offset = 0;  // where the key starts in the file
};

struct ParsedGguf {
  uint32_t version = 0;
  uint64_t alignment = kDefaultAlignment;
  std::vector<KeyValue> metadata;   // file order; keys unique
  std::vector<TensorInfo> tensors;  // file order; names unique
  uint64_t data_offset = 0;         // the data section's start in the file (aligned)
  uint64_t data_size = 0;           // bytes from there to the end of the file
};

// Validates `size` bytes of a GGUF file (v2 or v3). `file` names it in messages.
ParsedGguf parse_gguf(const uint8_t* bytes, uint64_t size, const std::string& file);

// Whether s is well-formed UTF-8 (no overlong forms, surrogates or code points > U+10FFFF).
bool is_valid_utf8(std::string_view s);

}  // namespace moex::gguf
