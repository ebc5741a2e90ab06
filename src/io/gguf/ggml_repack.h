// Lossless conversion of ggml tensor rows into moex's weight formats (quant/format.h): the
// packed codes, scales and biases that moex's kernels read, chosen so that moex's
// dequantization of the result gives the bits gguf::dequantize gives (docs/gguf.md,
// "Repacking into moex's formats", has the mapping per type and why it is exact).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "io/gguf/ggml_type.h"
#include "quant/view.h"

namespace moex::gguf {

// The moex format rows of type t repack into: its ggml block mode (native_format) for Q4_0,
// Q5_0, Q8_0, Q2_K..Q6_K, IQ4_NL and IQ4_XS (the last two as 8-bit codes: code book value +
// 128); affine with F32 scales and biases for Q4_1 and Q5_1 (group 32); mxfp4 for MXFP4; kFloat
// for F32, F16, BF16. nullopt for a type that has no lossless form in moex
// (repack_unsupported_reason says why). Every repack dequantizes to ggml's bits, the sign of
// zero and NaN payloads included.
std::optional<quant::Format> repack_format(GgmlType t);

// Why t cannot be repacked losslessly (a static sentence naming the field that does not fit),
// or nullptr when it can.
const char* repack_unsupported_reason(GgmlType t);

// The ggml block mode type t is held in (q4_0, q5_0, q8_0, q2_k, q3_k, q4_k, q5_k, q6_k at their
// own bits per weight; IQ4_NL and IQ4_XS as 8-bit codes: quant/format.h), or nullopt;
// repack_format prefers it.
std::optional<quant::Format> native_format(GgmlType t);
// repack for a type with a native_format, once repack has checked the sizes.
quant::QuantizedMatrix native_repack(GgmlType t, const uint8_t* src, int64_t rows, int64_t k);

// Converts `rows` rows of `k` elements of type t, stored contiguously at src (src_bytes
// bytes: rows * k / block_elems blocks), into an owning moex matrix of rows x k in
// repack_format(t). `what` (a tensor name) starts every error. moex::Error when t has no
// lossless form, k is not a positive whole number of t's blocks, src_bytes is not the size
// of the rows, or a block holds a scale that moex cannot reproduce (MXFP4's exponent byte 255),
// naming the row and block.
quant::QuantizedMatrix repack(GgmlType t, const uint8_t* src, uint64_t src_bytes, int64_t rows,
                              int64_t k, std::string_view what);

}  // namespace moex::gguf
