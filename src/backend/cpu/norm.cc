// RMSNorm and LayerNorm: one row at a time, sums in f32 with vectorizable reductions.
#include "backend/cpu/norm.h"

#include <cmath>

namespace moex::ops {

void rms_norm(const RmsNormArgs& a) {
  for (int64_t r = 0; r < a.rows; ++r) {
    const float* x = a.x + r * a.dim;
    float* o = a.out + r * a.dim;
    float ss = 0.f;
#pragma omp simd reduction(+ : ss)
    for (int64_t i = 0; i < a.dim; ++i) ss += x[i] * x[i];
    const float inv = 1.f / std::sqrt(ss / float(a.dim) + a.eps);
    if (a.weight) {
#pragma omp simd
      for (int64_t i = 0; i < a.dim; ++i) o[i] = a.weight[i] * (x[i] * inv);
    } else {
#pragma omp simd
      for (int64_t i = 0; i < a.dim; ++i) o[i] = x[i] * inv;
    }
  }
}

void layer_norm(const LayerNormArgs& a) {
  for (int64_t r = 0; r < a.rows; ++r) {
    const float* x = a.x + r * a.dim;
    float* o = a.out + r * a.dim;
    float sum = 0.f;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < a.dim; ++i) sum += x[i];
    const float mean = sum / float(a.dim);
    float var = 0.f;
#pragma omp simd reduction(+ : var)
    for (int64_t i = 0; i < a.dim; ++i) var += (x[i] - mean) * (x[i] - mean);
    const float inv = 1.f / std::sqrt(var / float(a.dim) + a.eps);
    for (int64_t i = 0; i < a.dim; ++i) {
      float y = (x[i] - mean) * inv;
      if (a.weight) y *= a.weight[i];
      if (a.bias) y += a.bias[i];
      o[i] = y;
    }
  }
}

}  // namespace moex::ops
