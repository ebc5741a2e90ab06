// The gated short convolution (see short_conv.h).
#include "backend/cpu/short_conv.h"

#include <algorithm>

namespace moex::ops {

void short_conv(const ShortConvArgs& a) {
  const int64_t H = a.channels, L = a.taps, keep = L - 1, n = a.steps;
  std::copy(a.state, a.state + keep * H, a.padded);
  for (int64_t t = 0; t < n; ++t) {
    const float* b = a.bcx + t * 3 * H;
    const float* xx = b + 2 * H;
    float* p = a.padded + (keep + t) * H;
    for (int64_t c = 0; c < H; ++c) p[c] = b[c] * xx[c];
  }
  for (int64_t t = 0; t < n; ++t) {
    const float* cgate = a.bcx + t * 3 * H + H;
    float* y = a.out + t * H;
    for (int64_t c = 0; c < H; ++c) {
      float s = 0.f;
      for (int64_t j = 0; j < L; ++j) s += a.w[c * L + j] * a.padded[(t + j) * H + c];
      if (a.bias) s += a.bias[c];
      y[c] = cgate[c] * s;
    }
  }
  std::copy(a.padded + n * H, a.padded + (n + keep) * H, a.state);
}

}  // namespace moex::ops
