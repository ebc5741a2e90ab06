// ShortConv: in_proj, gate, depthwise causal convolution with carried state, gate, out_proj.
#include "model/engine/short_conv.h"

#include <algorithm>

namespace moex::model::engine {

ShortConv::ShortConv(const backend::ModelBackend& be, const ShortConvWeights& w, int64_t hidden,
                     int64_t kernel)
    : be_(be), w_(w), hidden_(hidden), kernel_(kernel) {}

void ShortConv::forward(const float* x, int64_t n, float* out, float* state,
                        ShortConvScratch& scratch) const {
  const int64_t H = hidden_, L = kernel_, keep = L - 1;
  grow(be_, scratch.bcx, n * 3 * H);
  grow(be_, scratch.padded, (keep + n) * H);
  grow(be_, scratch.y, n * H);
  ActivationBuffer& bcx = scratch.bcx;
  ActivationBuffer& padded = scratch.padded;
  ActivationBuffer& ys = scratch.y;
  be_.linear({.lin = &w_.in_proj, .x = x, .rows = n, .out = bcx.data()});
  // padded = [state; B * x]
  std::copy(state, state + keep * H, padded.begin());
  for (int64_t t = 0; t < n; ++t) {
    const float* b = bcx.data() + t * 3 * H;
    const float* xx = b + 2 * H;
    float* p = padded.data() + (keep + t) * H;
    for (int64_t c = 0; c < H; ++c) p[c] = b[c] * xx[c];
  }
  // y[t][c] = C[t][c] * (sum_j w[c][j] * padded[t + j][c] + bias[c])
  const float* wc = w_.conv.data();
  const float* bias = w_.bias.empty() ? nullptr : w_.bias.data();
  for (int64_t t = 0; t < n; ++t) {
    const float* cgate = bcx.data() + t * 3 * H + H;
    float* y = ys.data() + t * H;
    for (int64_t c = 0; c < H; ++c) {
      float s = 0.f;
      for (int64_t j = 0; j < L; ++j) s += wc[c * L + j] * padded[size_t((t + j) * H + c)];
      if (bias) s += bias[c];
      y[c] = cgate[c] * s;
    }
  }
  std::copy(padded.begin() + n * H, padded.begin() + (n + keep) * H, state);
  be_.linear({.lin = &w_.out_proj, .x = ys.data(), .rows = n, .out = out});
}

}  // namespace moex::model::engine
