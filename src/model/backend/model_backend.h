// The contract a backend implements for the whole-model ops of a forward pass, one
// implementation per backend (MLX's pattern: one contract per op): linear layers in every
// weight format, norms, RoPE, the KV cache and attention, the embedding lookup, the dense
// MLP's activation, and the MoE block's backend (moe/moe_backend.h). The engine, the MoE
// FFN and the short convolution call model/ops only through it; two small loops still run
// inline on host memory (Llama-4's per-position query temperature and LFM2's depthwise
// convolution) and become ops when a backend keeps activations elsewhere.
#pragma once

#include <cstdint>

#include "kernels/moe_contract.h"
#include "model/ops/attention.h"
#include "model/ops/causal_conv.h"
#include "model/ops/gated_delta.h"
#include "model/ops/gated_norm.h"
#include "model/ops/linear.h"
#include "model/ops/mla_attention.h"
#include "model/ops/norm.h"
#include "model/ops/rope.h"
#include "model/ops/ssm_scan.h"
#include "model/ops/stream_ops.h"
#include "moe/moe_backend.h"

namespace moex::model {

// Where the activations, the KV cache and the non-expert weights live: host memory for every
// backend today (the CUDA backend keeps only the MoE layers' experts on the device; the
// device implementation of these ops is the CUDA engine's work, docs/architecture.md).
enum class OpsMemory { kHost };

class ModelBackend {
 public:
  virtual ~ModelBackend() = default;
  // The backend this is (and the MoE block's): what --backend names.
  virtual moe::Backend kind() const = 0;
  virtual OpsMemory memory() const = 0;
  virtual const moe::MoeBackend& moe() const = 0;

  // out[r] = W x[r] + b (ops::linear's contract: every quant::Format, unquantized included).
  virtual void linear(const ops::LinearArgs& a) const = 0;
  // Several linears of the same rows, outputs bit-identical to separate linear() calls.
  virtual void linear_same_input(const ops::Linear* const* lins, float* const* outs, int count,
                                 const float* x, int64_t rows) const = 0;
  virtual void rms_norm(const ops::RmsNormArgs& a) const = 0;
  virtual void layer_norm(const ops::LayerNormArgs& a) const = 0;
  // Rotates x[rows][heads][head_dim], row r at position pos0 + r.
  virtual void rope(const ops::Rope& rope, float* x, int64_t rows, int64_t heads,
                    int64_t head_dim, int64_t pos0) const = 0;
  // Appends k, v [rows][kv_heads][head_dim] to the cache (moex::Error past its capacity).
  virtual void kv_append(ops::KvCache& cache, const float* k, const float* v,
                         int64_t rows) const = 0;
  virtual void attention(const ops::AttentionArgs& a) const = 0;
  // out[i] = row tokens[i] of the table, as f32, for i < n.
  virtual void embedding_rows(const ops::MatrixRef& table, const int32_t* tokens, int64_t n,
                              float* out) const = 0;
  // out = silu(gate) * up elementwise over n values (the dense MLP's activation).
  virtual void swiglu(const float* gate, const float* up, float* out, int64_t n) const = 0;
  // out = act(gate, up) elementwise over n values for any gated kind (kernels::apply_activation;
  // kSwiGLU is swiglu above).
  virtual void gated_activation(kernels::Activation act, const float* gate, const float* up,
                                float* out, int64_t n) const = 0;
  // The gated delta rule over a.steps positions of one sequence (ops/gated_delta.h).
  virtual void gated_delta(const ops::GatedDeltaArgs& a) const = 0;
  // The Mamba-2 state-space recurrence over a.steps positions of one sequence (ops/ssm_scan.h).
  virtual void ssm_scan(const ops::SsmScanArgs& a) const = 0;
  // The causal depthwise conv with SiLU of those two mixers (ops/causal_conv.h).
  virtual void causal_conv_silu(const ops::CausalConvArgs& a) const = 0;
  // Their gated RMSNorms (ops/gated_norm.h).
  virtual void gated_rms_norm(const ops::GatedRmsNormArgs& a) const = 0;
  // One matrix per head (mlx-lm's MultiLinear; ops::multi_linear's contract).
  virtual void multi_linear(const ops::MultiLinearArgs& a) const = 0;
  // Multi-head latent attention over the compressed cache (ops/mla_attention.h).
  virtual void mla_attention(const ops::MlaAttentionArgs& a) const = 0;

  // The residual stream's elementwise ops (ops/stream_ops.h has each definition).
  virtual void add_scaled(float* x, const float* y, int64_t n, float scale) const = 0;
  virtual void scale(float* x, int64_t n, float s) const = 0;
  virtual void sigmoid_gate(float* x, const float* gate, int64_t n) const = 0;
  virtual void divide_and_softcap(float* x, int64_t n, float divisor, float cap) const = 0;
  virtual void query_temperature(const ops::QueryTemperatureArgs& a) const = 0;
  virtual void split_halves(const float* src, float* first, float* second, int64_t rows,
                            int64_t half) const = 0;
  // dst[0..n) = src[0..n) (buffers of this backend).
  virtual void copy(float* dst, const float* src, int64_t n) const = 0;
};

// The backend of `kind`: the CPU ops with the CPU or the CUDA MoE backend. Throws
// moex::Error when the MoE backend of `kind` is not built in or cannot run here (as
// moe::moe_backend).
const ModelBackend& model_backend(moe::Backend kind);

}  // namespace moex::model
