// Scalar bodies of the elementwise ops (std::exp; the reference for the SIMD bodies).
#include <algorithm>
#include <cmath>

#include "kernels/elementwise_variants.h"

namespace moex::kernels {

void act_span_scalar(Activation act, const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    switch (act) {
      case Activation::kSwiGLU: {
        const float g = gate[i];
        out[i] = g / (1.f + std::exp(-g)) * up[i];
        break;
      }
      case Activation::kGeGLU: {
        const float g = gate[i];
        const float z = kGeluC2 * (g + kGeluCubic * g * g * g);
        out[i] = g / (1.f + std::exp(-z)) * up[i];
        break;
      }
      case Activation::kSwiGLUOai: {
        const float g = std::min(gate[i], kOaiLimit);
        const float u = std::max(std::min(up[i], kOaiLimit), -kOaiLimit);
        out[i] = g / (1.f + std::exp(-(kOaiAlpha * g))) * (u + 1.f);
        break;
      }
      case Activation::kSquaredReLU: {
        const float r = std::max(up[i], 0.f);
        out[i] = r * r;
        break;
      }
    }
  }
}

void weighted_sum_span_scalar(const float* y, int64_t y_stride, const float* scores, int top_k,
                              float* out, int64_t n) {
  for (int64_t h = 0; h < n; ++h) {
    float acc = 0.f;
    for (int k = 0; k < top_k; ++k) acc += scores[k] * y[k * y_stride + h];
    out[h] = acc;
  }
}

}  // namespace moex::kernels
