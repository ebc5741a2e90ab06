// The Mamba-2 mixer of Nemotron-H (mlx-lm nemotron_h.py NemotronHMamba2Mixer): in_proj gives
// z (the gate), xBC and dt; a causal depthwise conv over xBC (+ bias) with SiLU splits into x,
// B, C; dt = clip(softplus(dt + dt_bias), time_step_limit); the selective state-space
// recurrence (ops/ssm_scan.h) with A = -exp(A_log) and the D skip; then silu(z) * y,
// RMSNorm per group of heads times the norm weight, out_proj.
#pragma once

#include "model/engine/scratch_grow.h"

#include <cstdint>
#include <vector>

#include "backend/model_backend.h"
#include "model/model_config.h"
#include "backend/cpu/float_vec.h"
#include "backend/cpu/linear.h"

namespace moex::model::engine {

struct Mamba2Weights {
  ops::Linear in_proj;             // [inner + conv_dim + heads][H]: z, xBC, dt
  ops::FloatVec conv, conv_bias;   // [C][L] (MLX Conv1d [C, L, 1], depthwise); [C] or empty
  ops::FloatVec dt_bias, a_log, d; // [heads]
  ops::FloatVec norm;              // [inner] gated RMSNorm weight
  ops::Linear out_proj;            // [H][inner]
};

// Scratch of Mamba2Mixer::forward, shared by every such layer of one engine.
struct Mamba2Scratch {
  ActivationBuffer proj, padded, conv, x, b, c, dt, y;
};

class Mamba2Mixer {
 public:
  Mamba2Mixer(const backend::ModelBackend& be, const Mamba2Weights& w, const Mamba2Params& p,
              double norm_eps);
  // x [n][H] (consecutive positions of one sequence) -> out [n][H]; advances that sequence's
  // `state` (state_size() floats: the conv state [(L-1)][C], oldest first, then the SSM state
  // [heads][head_dim][state_dim]) by n positions.
  void forward(const float* x, int64_t n, float* out, float* state, Mamba2Scratch& s) const;
  int64_t conv_state_size() const { return (p_.conv_kernel - 1) * p_.conv_dim(); }
  int64_t state_size() const { return conv_state_size() + p_.inner() * p_.state_dim; }
  // The projection rows of in_proj and out_proj (what a decode step reads besides the conv).
  const Mamba2Weights& weights() const { return w_; }

 private:
  const backend::ModelBackend& be_;
  const Mamba2Weights& w_;
  Mamba2Params p_;
  float norm_eps_;
  ops::FloatVec a_;       // A = -exp(A_log), [heads]
  ops::FloatVec conv_w_;  // the conv weight tap-major, [L][C] (ops/causal_conv.h)
};

}  // namespace moex::model::engine
