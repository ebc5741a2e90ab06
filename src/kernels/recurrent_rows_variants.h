// Internal: the SIMD bodies of kernels/recurrent_rows.h, each in a file compiled for its ISA.
#pragma once

#include <cstdint>

namespace moex::kernels {

// One row (the AVX2 bodies; recurrent_rows.cc loops them over rows).
float delta_rule_row_f32__avx2(float* s, const float* k, const float* q, float g, float beta,
                               float v, int64_t n);
float ssm_row_f32__avx2(float* s, const float* b, const float* c, float decay, float bx, int64_t n);
// Rows at a time (recurrent_rows.h's contract).
void delta_rule_rows_f32__avx512(float* s, int64_t rows, const float* k, const float* q, float g,
                                 float beta, const float* v, float* y, int64_t n);
void ssm_rows_f32__avx512(float* s, int64_t rows, const float* b, const float* c, float decay,
                          const float* bx, float* y, int64_t n);

}  // namespace moex::kernels
