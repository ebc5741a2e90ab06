// Gated DeltaNet, the linear-attention mixer of Qwen3-Next (mlx-lm qwen3_next.py
// Qwen3NextGatedDeltaNet; Qwen3.5's split projections too): projections to q, k, v, z, b, a;
// a causal depthwise conv over [q; k; v] with SiLU; q/k L2-normalized (q also by Dk^-0.5);
// the gated delta rule with decay g = exp(-exp(A_log) * softplus(a + dt_bias)) and
// beta = sigmoid(b); RMSNorm(y) * silu(z) per value head; out_proj.
#pragma once

#include "model/engine/scratch_grow.h"

#include <cstdint>
#include <vector>

#include "backend/model_backend.h"
#include "model/model_config.h"
#include "backend/cpu/float_vec.h"
#include "backend/cpu/linear.h"

namespace moex::model::engine {

struct GatedDeltaNetWeights {
  // Qwen3-Next: in_proj_qkvz [2 Kd + 2 Vd][H] and in_proj_ba [2 Hv][H], each laid out per key
  // head (q, k, v, z of that head's group; b, a of its value heads). Qwen3.5: in_proj_qkv
  // [2 Kd + Vd][H] already [q; k; v], in_proj_z [Vd][H], in_proj_b / _a [Hv][H]. A Qwen3-Next
  // GGUF file (llama.cpp's qkvz split) has qkv and z with the per-key-head ba.
  ops::Linear qkvz, ba;
  ops::Linear qkv, z, b, a;
  ops::FloatVec conv;             // [C][L] (MLX Conv1d [C, L, 1], depthwise), C = 2 Kd + Vd
  ops::FloatVec dt_bias, a_log;   // [Hv]; a_log holds A = -exp(A_log) with p.a_log_holds_a
  ops::FloatVec norm;             // [Dv] gated RMSNorm weight
  ops::Linear out_proj;           // [H][Vd]
};

// Scratch of GatedDeltaNet::forward, shared by every such layer of one engine.
struct GatedDeltaNetScratch {
  ActivationBuffer proj, proj_ba, padded, conv, q, k, v, z, b, a, y, y_tiled;
};

class GatedDeltaNet {
 public:
  GatedDeltaNet(const backend::ModelBackend& be, const GatedDeltaNetWeights& w, const GatedDeltaParams& p,
                int64_t hidden, double norm_eps);
  // x [n][H] (consecutive positions of one sequence) -> out [n][H]; advances that sequence's
  // `state` (state_size() floats: the conv state [(L-1)][C], oldest first, then the
  // recurrent state [Hv][Dv][Dk]) by n positions.
  void forward(const float* x, int64_t n, float* out, float* state,
               GatedDeltaNetScratch& scratch) const;
  int64_t conv_state_size() const { return (p_.conv_kernel - 1) * p_.conv_dim(); }
  int64_t state_size() const {
    return conv_state_size() + p_.v_heads * p_.v_head_dim * p_.k_head_dim;
  }

 private:
  // The projections, as [q; k; v] rows into `mixed` ([n][C]) and z, b, a.
  void project(const float* x, int64_t n, float* mixed, GatedDeltaNetScratch& s) const;
  // proj_ba's per-key-head [b, a] columns into b and a.
  void split_ba(int64_t n, GatedDeltaNetScratch& s) const;

  const backend::ModelBackend& be_;
  const GatedDeltaNetWeights& w_;
  GatedDeltaParams p_;
  int64_t hidden_;
  float norm_eps_;
  ops::FloatVec conv_w_;  // the conv weight tap-major, [L][C] (ops/causal_conv.h), placed
  ops::FloatVec neg_a_;   // A = -exp(A_log) per value head, placed
};

}  // namespace moex::model::engine
