// The argument structs of the backend contract's ops that take only pointers and sizes,
// declared once and used by every backend: the CPU ops (backend/cpu) and the CUDA ops
// (backend/cuda/ops) take these very structs. Every pointer is memory of the backend that runs
// the op. What each op computes is stated beside its CPU declaration (backend/cpu/<op>.h).
#pragma once

#include <cstdint>

#include "backend/kv_cache.h"

namespace moex::ops {

struct RmsNormArgs {
  const float* x = nullptr;       // [rows][dim]
  float* out = nullptr;           // [rows][dim]; may alias x
  const float* weight = nullptr;  // [dim]; nullptr means all ones
  int64_t rows = 1, dim = 0;
  float eps = 1e-6f;
};

struct LayerNormArgs {
  const float* x = nullptr;       // [rows][dim]
  float* out = nullptr;           // [rows][dim]; may alias x
  const float* weight = nullptr;  // [dim]; nullptr means ones
  const float* bias = nullptr;    // [dim]; nullptr means zeros
  int64_t rows = 1, dim = 0;
  float eps = 1e-5f;
};

// The gated RMSNorms' two orders (cpu/gated_norm.h).
enum class GateOrder { kNormThenGate, kGateThenNorm };

struct GatedRmsNormArgs {
  GateOrder order = GateOrder::kNormThenGate;
  const float* x = nullptr;       // [rows][dim]
  const float* gate = nullptr;    // [rows][dim]
  const float* weight = nullptr;  // [dim]
  float* out = nullptr;           // [rows][dim]; may alias x (not gate)
  int64_t rows = 1, dim = 0, groups = 1;
  float eps = 1e-6f;
};

struct CausalConvArgs {
  const float* x = nullptr;     // [taps - 1 + steps][channels]
  const float* w = nullptr;     // [taps][channels], tap-major (see transpose_conv_weight)
  const float* bias = nullptr;  // [channels] or nullptr
  float* out = nullptr;         // [steps][channels]
  int64_t steps = 0, channels = 0, taps = 0;
};

struct GatedDeltaArgs {
  const float* q = nullptr;     // [steps][k_heads][k_dim] (normalized and scaled by the caller)
  const float* k = nullptr;     // [steps][k_heads][k_dim]
  const float* v = nullptr;     // [steps][v_heads][v_dim]
  const float* g = nullptr;     // [steps][v_heads] decay factors
  const float* beta = nullptr;  // [steps][v_heads]
  float* state = nullptr;       // [v_heads][v_dim][k_dim], updated in place
  float* out = nullptr;         // [steps][v_heads][v_dim]
  int64_t steps = 0, k_heads = 0, v_heads = 0, k_dim = 0, v_dim = 0;
};

struct SsmScanArgs {
  const float* x = nullptr;   // [steps][heads][head_dim]
  const float* dt = nullptr;  // [steps][heads], after softplus(dt + dt_bias) and the limits
  const float* a = nullptr;   // [heads], A = -exp(A_log)
  const float* b = nullptr;   // [steps][groups][state_dim]
  const float* c = nullptr;   // [steps][groups][state_dim]
  const float* d = nullptr;   // [heads], the skip weight D
  float* state = nullptr;     // [heads][head_dim][state_dim], updated in place
  float* out = nullptr;       // [steps][heads][head_dim]
  int64_t steps = 0, heads = 0, head_dim = 0, groups = 0, state_dim = 0;
};

struct QueryTemperatureArgs {
  float* q = nullptr;  // [rows][width]
  int64_t rows = 0, width = 0;
  int64_t pos0 = 0;    // position of row 0
  float floor_scale = 1, attn_scale = 0;
};

// LFM2's gated short convolution over `steps` positions of one sequence (cpu/short_conv.h).
struct ShortConvArgs {
  const float* bcx = nullptr;   // [steps][3 * channels]: B, C and x of each position
  const float* w = nullptr;     // [channels][taps], the checkpoint's depthwise weight
  const float* bias = nullptr;  // [channels] or nullptr
  float* state = nullptr;       // [taps - 1][channels], oldest first; advanced by `steps`
  float* padded = nullptr;      // scratch [taps - 1 + steps][channels]
  float* out = nullptr;         // [steps][channels]
  int64_t steps = 0, channels = 0, taps = 0;
};

// A strided copy of `blocks` column blocks per row (head and column splits, de-interleaving):
// for r < rows, b < blocks: dst[r * dst_stride + b * dst_block_stride + c] =
// src[r * src_stride + b * src_block_stride + c], c < cols.
struct CopyColumnsArgs {
  const float* src = nullptr;
  float* dst = nullptr;  // must not overlap src
  int64_t rows = 0, cols = 0, src_stride = 0, dst_stride = 0;
  int64_t blocks = 1, src_block_stride = 0, dst_block_stride = 0;
};

// Mamba-2's step sizes: out[r][h] = clamp(softplus(x[r * x_stride + h] + bias[h]), lo, hi).
struct DtSoftplusArgs {
  const float* x = nullptr;     // row r's heads at x + r * x_stride
  const float* bias = nullptr;  // [heads]
  float* out = nullptr;         // [rows][heads]
  int64_t rows = 0, heads = 0, x_stride = 0;
  float lo = 0.f, hi = 0.f;
};

// Gated DeltaNet's gates, in place per row r and value head h:
// a = exp(neg_exp_a_log[h] * softplus(a + dt_bias[h])) (the decay), b = sigmoid(b) (beta).
struct DeltaGatesArgs {
  float* a = nullptr;              // [rows][heads]
  float* b = nullptr;              // [rows][heads]
  const float* neg_exp_a_log = nullptr;  // A = -exp(A_log) [heads], formed once at load
  const float* dt_bias = nullptr;  // [heads]
  int64_t rows = 0, heads = 0;
};

struct AttentionArgs {
  const float* q = nullptr;       // [rows][heads][head_dim]
  const KvCache* cache = nullptr; // holds keys/values up to at least pos0 + rows
  int64_t rows = 1;               // query rows; row r is at position pos0 + r
  int64_t pos0 = 0;
  int64_t heads = 0;
  float scale = 1.f;              // usually head_dim^-0.5
  float* out = nullptr;           // [rows][heads][head_dim]
  int64_t chunk = 0;              // > 0: Llama-4 chunked attention (cpu/attention.h)
  int64_t window = 0;             // > 0: sliding window, row at p sees keys p-window+1..p
  const float* sinks = nullptr;   // [heads] or nullptr: one extra softmax logit per head
                                  // that takes mass and adds nothing (gpt-oss)
};

struct MlaAttentionArgs {
  const float* q = nullptr;        // [rows][heads][latent_dim + rope_dim]
  const KvCache* cache = nullptr;  // keys only, 1 kv head of latent_dim + rope_dim, holding
                                   // at least pos0 + rows positions
  int64_t latent_dim = 0;          // kv_lora_rank: the leading features of a cache row
  int64_t rows = 1;                // row r is at position pos0 + r and sees [0, pos0 + r]
  int64_t pos0 = 0;
  int64_t heads = 0;
  float scale = 1.f;
  float* out = nullptr;            // [rows][heads][latent_dim]
};

}  // namespace moex::ops
