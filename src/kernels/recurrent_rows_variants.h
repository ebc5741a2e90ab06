// Internal: the SIMD bodies of kernels/recurrent_rows.h, each in a file compiled for its ISA.
#pragma once

#include <cstdint>

namespace moex::kernels {

float delta_rule_row_f32__avx2(float* s, const float* k, const float* q, float g, float beta,
                               float v, int64_t n);
float ssm_row_f32__avx2(float* s, const float* b, const float* c, float decay, float bx, int64_t n);
float delta_rule_row_f32__avx512(float* s, const float* k, const float* q, float g, float beta,
                                 float v, int64_t n);
float ssm_row_f32__avx512(float* s, const float* b, const float* c, float decay, float bx,
                          int64_t n);

}  // namespace moex::kernels
