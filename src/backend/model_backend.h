// The contract a backend implements for the whole-model ops of a forward pass, one
// implementation per backend folder (MLX's pattern: one contract per op): memory (alloc,
// upload, download), linear layers in every weight format, norms, RoPE, the KV cache and
// attention, the embedding lookup, the gated activations, the recurrent mixers' ops and the
// residual stream's elementwise ops. Every pointer an op takes is memory of the backend that
// runs it (Buffer). The MoE block's backend is moe::MoeBackend (src/moe), paired with this one
// by the engine.
#pragma once

#include <cstdint>

#include "backend/buffer.h"
#include "backend/cpu/attention.h"
#include "backend/cpu/causal_conv.h"
#include "backend/cpu/gated_delta.h"
#include "backend/cpu/gated_norm.h"
#include "backend/cpu/linear.h"
#include "backend/cpu/mla_attention.h"
#include "backend/cpu/norm.h"
#include "backend/cpu/rope.h"
#include "backend/cpu/short_conv.h"
#include "backend/cpu/ssm_scan.h"
#include "backend/cpu/stream_ops.h"
#include "backend/kv_cache.h"
#include "backend/op.h"
#include "kernels/moe_contract.h"

namespace moex::backend {

class ModelBackend {
 public:
  virtual ~ModelBackend() = default;
  // "cpu" or "cuda": what --backend names.
  virtual const char* name() const = 0;
  virtual Memory memory() const = 0;
  // Whether this backend implements `op`. Calling an op it does not support throws
  // moex::Error naming the op and the backend (require_op).
  virtual bool supports_op(Op op) const = 0;

  // `bytes` of this backend's memory, zero-filled (moex::Error when it cannot be had).
  virtual Buffer alloc(int64_t bytes) const = 0;
  // Copies between host memory and this backend's memory; both complete before returning.
  virtual void upload(void* dst, const void* host_src, int64_t bytes) const = 0;
  virtual void download(void* host_dst, const void* src, int64_t bytes) const = 0;
  // dst[0..bytes) = 0, in this backend's memory.
  virtual void zero(void* dst, int64_t bytes) const = 0;
  // An empty KV cache in this backend's memory (ops::KvCache; values = false: keys only) of
  // f32 or f16 elements (f16 in host memory only: moex::Error naming the backend otherwise).
  ops::KvCache new_kv_cache(int64_t kv_heads, int64_t head_dim, int64_t capacity,
                            bool values = true, DType dtype = DType::F32) const;

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
  // The gated delta rule over a.steps positions of one sequence (cpu/gated_delta.h).
  virtual void gated_delta(const ops::GatedDeltaArgs& a) const = 0;
  // The Mamba-2 state-space recurrence over a.steps positions of one sequence (cpu/ssm_scan.h).
  virtual void ssm_scan(const ops::SsmScanArgs& a) const = 0;
  // The causal depthwise conv with SiLU of those two mixers (cpu/causal_conv.h).
  virtual void causal_conv_silu(const ops::CausalConvArgs& a) const = 0;
  // LFM2's gated short convolution, its state advanced (cpu/short_conv.h).
  virtual void short_conv(const ops::ShortConvArgs& a) const = 0;
  // Their gated RMSNorms (cpu/gated_norm.h).
  virtual void gated_rms_norm(const ops::GatedRmsNormArgs& a) const = 0;
  // One matrix per head (mlx-lm's MultiLinear; ops::multi_linear's contract).
  virtual void multi_linear(const ops::MultiLinearArgs& a) const = 0;
  // Multi-head latent attention over the compressed cache (cpu/mla_attention.h).
  virtual void mla_attention(const ops::MlaAttentionArgs& a) const = 0;

  // The residual stream's elementwise ops (cpu/stream_ops.h has each definition).
  virtual void add_scaled(float* x, const float* y, int64_t n, float scale) const = 0;
  virtual void scale(float* x, int64_t n, float s) const = 0;
  virtual void sigmoid_gate(float* x, const float* gate, int64_t n) const = 0;
  virtual void divide_and_softcap(float* x, int64_t n, float divisor, float cap) const = 0;
  virtual void query_temperature(const ops::QueryTemperatureArgs& a) const = 0;
  virtual void split_halves(const float* src, float* first, float* second, int64_t rows,
                            int64_t half) const = 0;
  // Strided row copies (head and column splits) and Mamba-2's dt (cpu/stream_ops.h).
  virtual void copy_columns(const ops::CopyColumnsArgs& a) const = 0;
  virtual void dt_softplus(const ops::DtSoftplusArgs& a) const = 0;
  // Gated DeltaNet's decay and beta gates (cpu/stream_ops.h).
  virtual void delta_gates(const ops::DeltaGatesArgs& a) const = 0;
  // dst[0..n) = src[0..n) (buffers of this backend).
  virtual void copy(float* dst, const float* src, int64_t n) const = 0;
};

// Throws moex::Error "the <name> backend has no <op> op" unless be.supports_op(op).
void require_op(const ModelBackend& be, Op op);

// The CPU backend: host memory, the ops of backend/cpu (SIMD per the active ISA).
const ModelBackend& cpu_backend();

}  // namespace moex::backend
