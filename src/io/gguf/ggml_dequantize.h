// Scalar reference dequantization of ggml tensor data to f32: F32, F16, BF16, Q4_0, Q4_1,
// Q5_0, Q5_1, Q8_0, Q2_K..Q6_K, MXFP4, IQ4_NL, IQ4_XS (docs/gguf.md has the block layouts).
// Each value is computed with the operations, in the order and at the f32 precision that
// the gguf Python package (gguf.quants.dequantize, numpy) uses, so the output is
// bit-identical to it (gguf_reference_test.py); ggml's C code computes the same values.
// This is the oracle for fast kernels, not a fast path itself.
#pragma once

#include <cstdint>

#include "io/gguf/ggml_type.h"

namespace moex::gguf {

// Dequantizes n elements (a whole number of t's blocks) stored in src_bytes bytes at src
// into dst[n]. moex::Error when t has no dequantization here, n is not a whole number of
// blocks, or src_bytes is not exactly the bytes n elements take.
void dequantize(GgmlType t, const uint8_t* src, uint64_t src_bytes, float* dst, int64_t n);

// The per-block routines, for callers that have checked the above: `blocks` whole blocks.
void dequantize_blocks(GgmlType t, const uint8_t* src, float* dst, int64_t blocks);

// K-quant blocks (ggml_dequantize_k.cc), 256 elements each.
void dequantize_q2_k(const uint8_t* b, float* y);
void dequantize_q3_k(const uint8_t* b, float* y);
void dequantize_q4_k(const uint8_t* b, float* y);
void dequantize_q5_k(const uint8_t* b, float* y);
void dequantize_q6_k(const uint8_t* b, float* y);

// The fp16 scale of a block, stored little-endian at p, as f32.
float load_f16(const uint8_t* p);

}  // namespace moex::gguf
