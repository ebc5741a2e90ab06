// Internal: the SIMD bodies of kernels/vector_f32.h, each in a file compiled for its ISA.
#pragma once

#include <cstdint>

namespace moex::kernels {

float dot_f32__avx2(const float* a, const float* b, int64_t n);
void axpy_f32__avx2(float a, const float* x, float* y, int64_t n);
float dot_f32__avx512(const float* a, const float* b, int64_t n);
void axpy_f32__avx512(float a, const float* x, float* y, int64_t n);
void scaled_dots_f32__avx512(const float* q, int64_t nq, const float* keys, int64_t n,
                             int64_t width, float scale, float* scores, int64_t stride);
// dst[i] = the f16 src[i] as f32, i < n (F16C).
void f16_to_f32_rows__avx2(const uint16_t* src, int64_t n, float* dst);
float exp_sum_f32__avx2(float* x, int64_t n, float m, float sum0);
float exp_sum_f32__avx512(float* x, int64_t n, float m, float sum0);
void scaled_dots_f16__avx512(const float* q, int64_t nq, const uint16_t* keys, int64_t n,
                             int64_t width, float scale, float* scores, int64_t stride);
void weighted_sums_f16__avx512(const float* p, int64_t nq, int64_t stride, const uint16_t* values,
                               int64_t n, int64_t width, float* out);
void weighted_sums_f32__avx512(const float* p, int64_t nq, int64_t stride, const float* values,
                               int64_t pitch, int64_t n, int64_t width, float* out);

}  // namespace moex::kernels
