// LFM2's gated short convolution mixer, as mlx-lm's lfm2_moe.ShortConv: B, C, x = split(in_proj(h));
// y = C * depthwise_conv1d(B * x) over the last L positions; out = out_proj(y). The state is
// the last L-1 values of B * x per channel (zeros at the start of a sequence).
#pragma once

#include "model/engine/scratch_grow.h"

#include <cstdint>
#include <vector>

#include "backend/model_backend.h"
#include "backend/cpu/float_vec.h"
#include "backend/cpu/linear.h"

namespace moex::model::engine {

struct ShortConvWeights {
  ops::Linear in_proj;   // [3H][H]
  ops::Linear out_proj;  // [H][H]
  ops::FloatVec conv;    // [H][L] (MLX Conv1d weight [H, L, 1], depthwise)
  ops::FloatVec bias;    // [H] or empty
};

// Scratch of ShortConv::forward, shared by every short-conv layer of one engine.
struct ShortConvScratch {
  ActivationBuffer bcx, padded, y;
};

class ShortConv {
 public:
  ShortConv(const backend::ModelBackend& be, const ShortConvWeights& w, int64_t hidden, int64_t kernel);
  // x [n][H] (consecutive positions of one sequence) -> out [n][H]; advances that sequence's
  // `state` ([(kernel-1)][H], oldest first; state_size() floats) by n positions.
  void forward(const float* x, int64_t n, float* out, float* state,
               ShortConvScratch& scratch) const;
  int64_t state_size() const { return (kernel_ - 1) * hidden_; }

 private:
  const backend::ModelBackend& be_;
  const ShortConvWeights& w_;
  int64_t hidden_, kernel_;
};

}  // namespace moex::model::engine
