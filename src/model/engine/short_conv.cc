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
  be_.short_conv({.bcx = bcx.data(),
                  .w = w_.conv.data(),
                  .bias = w_.bias.empty() ? nullptr : w_.bias.data(),
                  .state = state,
                  .padded = padded.data(),
                  .out = ys.data(),
                  .steps = n,
                  .channels = H,
                  .taps = L});
  be_.linear({.lin = &w_.out_proj, .x = ys.data(), .rows = n, .out = out});
}

}  // namespace moex::model::engine
