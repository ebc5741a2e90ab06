// Internal: the SIMD bodies of kernels/vector_f32.h, each in a file compiled for its ISA.
#pragma once

#include <cstdint>

namespace moex::kernels {

float dot_f32__avx2(const float* a, const float* b, int64_t n);
void axpy_f32__avx2(float a, const float* x, float* y, int64_t n);
float dot_f32__avx512(const float* a, const float* b, int64_t n);
void axpy_f32__avx512(float a, const float* x, float* y, int64_t n);

}  // namespace moex::kernels
