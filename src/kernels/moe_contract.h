// The contracts of the MoE expert kernels shared by every backend (scalar reference, AVX2,
// AVX-512, CUDA): views of stacked quantized expert weights and the Args of the two decode
// paths. docs/background.md §1 defines the computation:
//   out = sum_k score_k * down_k( act( gate_k(x), up_k(x) ) )
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "quant/format.h"
#include "quant/view.h"

namespace moex::kernels {

enum class Activation {
  kSwiGLU,      // silu(gate) * up
  kGeGLU,       // gelu_tanh(gate) * up
  kSquaredReLU, // relu(up)^2, no gate projection (fc1 = up, fc2 = down)
  kSwiGLUOai    // gpt-oss: g = min(gate, 7), u = clip(up, -7, 7); g * sigmoid(1.702 g) * (u + 1)
};
const char* activation_name(Activation a);

// One stacked projection: experts x n output rows x k inputs (MLX's transposed layout: row r
// of expert e dots with the input vector), in any quant::Mode. kFloat: w holds float rows of
// sb_dtype (F32/F16/BF16), bits is their width, group_size 0, scales and biases nullptr.
struct QuantWeightsView {
  const uint8_t* w = nullptr;       // packed rows; expert e row r at w + (e*n + r)*row_bytes()
  const void* scales = nullptr;     // [experts][n][k/group_size], dtype sb_dtype (kFloat: none)
  const void* biases = nullptr;     // same shape and dtype as scales; nullptr in the fp modes
  DType sb_dtype = DType::BF16;     // F32/F16/BF16 (affine); U8 codes (fp modes); elements (kFloat)
  int64_t experts = 0, n = 0, k = 0;
  int bits = 4, group_size = 64;
  quant::Mode mode = quant::Mode::kAffine;

  quant::Format format() const { return {mode, bits, group_size, sb_dtype}; }
  // An unquantized stack: experts x n rows x k elements of `dtype` (F32, F16 or BF16) at w.
  static QuantWeightsView dense(const void* w, DType dtype, int64_t experts, int64_t n,
                                int64_t k) {
    const quant::Format f = quant::Format::dense(dtype);
    QuantWeightsView v;
    v.w = static_cast<const uint8_t*>(w);
    v.sb_dtype = dtype;
    v.mode = f.mode;
    v.bits = f.bits;
    v.group_size = f.group_size;
    v.experts = experts;
    v.n = n;
    v.k = k;
    return v;
  }

  // One matrix (any mode) as a one-expert stack, the view the row kernels take.
  static QuantWeightsView one_expert(const quant::QuantMatrixView& m) {
    QuantWeightsView v;
    v.w = m.w;
    v.scales = m.scales;
    v.biases = m.biases;
    v.sb_dtype = m.sb_dtype;
    v.mode = m.mode;
    v.experts = 1;
    v.n = m.rows;
    v.k = m.k;
    v.bits = m.bits;
    v.group_size = m.group_size;
    return v;
  }

  int64_t row_bytes() const { return k * bits / 8; }
  int64_t groups_per_row() const { return group_size > 0 ? k / group_size : 0; }  // 0: kFloat
  const uint8_t* row(int64_t e, int64_t r) const { return w + (e * n + r) * row_bytes(); }
  int64_t sb_offset(int64_t e, int64_t r) const { return (e * n + r) * groups_per_row(); }
  // Bytes of one row's scales (a ggml mode: its scale blob), and the first scale byte of
  // row r of expert e.
  int64_t scale_row_bytes() const { return format().scale_row_bytes(k); }
  const uint8_t* scale_row(int64_t e, int64_t r) const {
    return static_cast<const uint8_t*>(scales) + (e * n + r) * scale_row_bytes();
  }
  // The first bias byte of row r of expert e (affine; biases are laid out as the scales).
  const uint8_t* bias_row(int64_t e, int64_t r) const {
    return static_cast<const uint8_t*>(biases) + (e * n + r) * scale_row_bytes();
  }
};

// The expert FFN of one MoE layer. gate is unused (w == nullptr) for kSquaredReLU.
// up/gate: [E][Dff][Din]; down: [E][Din][Dff]. Optional per-expert linear biases (OLMoE's
// mlp_bias, as mlx-lm's SwitchLinear(bias=True)): f32 [E][Dff] for gate and up, [E][Din] for
// down, added to each projection's output before the activation / the score multiply.
struct MoeExpertsView {
  QuantWeightsView gate, up, down;
  Activation act = Activation::kSwiGLU;
  const float* gate_bias = nullptr;
  const float* up_bias = nullptr;
  const float* down_bias = nullptr;
  bool has_biases() const { return gate_bias || up_bias || down_bias; }
  int64_t din() const { return up.k; }
  int64_t dff() const { return up.n; }
};

// Fused decode path, one token: stage A then stage B (docs/background.md §1).
struct FusedDecodeArgs {
  const MoeExpertsView* experts = nullptr;
  const float* x = nullptr;            // [Din]
  const int32_t* expert_ids = nullptr; // [top_k], may repeat
  const float* scores = nullptr;       // [top_k]
  int top_k = 0;
  float* act = nullptr;                // scratch [top_k][Dff], f32
  float* partials = nullptr;           // scratch [top_k][Din], f32
  float* out = nullptr;                // [Din], f32: sum over k in f32, in order k = 0..top_k-1
};

// MLX gather_qmm with transpose=True: out[b] = x[lhs[b]] . W[rhs[b]]^T for b in [0, batch).
struct GatherQmmArgs {
  const float* x = nullptr;                // [x_rows][w.k]
  int64_t x_rows = 0;
  const QuantWeightsView* w = nullptr;
  const int32_t* lhs_indices = nullptr;    // [batch]; nullptr means b
  const int32_t* rhs_indices = nullptr;    // [batch] expert ids
  int64_t batch = 0;
  float* out = nullptr;                    // [batch][w.n]
  // CPU: run at the exact precision tier whatever the active one (kernels/precision.h). The
  // routers ask for it: a top-k choice flipped by rounding costs more than their bytes save.
  bool exact = false;
};

}  // namespace moex::kernels
