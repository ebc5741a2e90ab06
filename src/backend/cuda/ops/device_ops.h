// The whole-model decode ops on the device, one per op of the backend contract
// (backend/model_backend.h), each with the semantics of the CPU op in backend/cpu it
// mirrors: RMSNorm / LayerNorm, RoPE, the embedding lookup, the gated activations, the KV
// cache append, attention and MLA attention, linear layers (single, several of one input,
// one matrix per head) and the greedy argmax; the recurrent mixers' ops are in mixer_ops.h.
// Plain C++ (no CUDA headers): every pointer named `device` below is device memory; host
// pointers are named so.
// Calls are queued on the default stream in order and return before the work finishes,
// except argmax_to_host (one 4-byte copy back) and the uploads (synchronous, as
// DeviceBuffer). Host-side problems (shapes, formats, capacity) throw moex::Error; kernels
// never fail (an out-of-range token or expert yields NaN, never a wild read).
// The per-element arithmetic shared with host code is in op_math.cuh.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "backend/cuda/device.h"
#include "backend/cuda/device_moe_layer.h"
#include "backend/op_args.h"
#include "kernels/moe_contract.h"
#include "quant/view.h"

namespace moex::cuda::ops {

// The contract's argument structs (backend/op_args.h), declared once for every backend; here
// every pointer in them is device memory, and a KvCache's buffers are device buffers
// (the CUDA backend's new_kv_cache, backend/cuda/cuda_model_backend.h).
using ::moex::ops::AttentionArgs;
using ::moex::ops::CopyColumnsArgs;
using ::moex::ops::DtSoftplusArgs;
using ::moex::ops::DeltaGatesArgs;
using ::moex::ops::KvCache;
using ::moex::ops::LayerNormArgs;
using ::moex::ops::MlaAttentionArgs;
using ::moex::ops::QueryTemperatureArgs;
using ::moex::ops::RmsNormArgs;

// --- norms (backend/cpu/norm.h) ---------------------------------------------------------------

// out = x * rsqrt(mean(x^2) + eps) * weight (f32 sums).
void rms_norm(const RmsNormArgs& a);

// out = (x - mean) * rsqrt(var + eps) * weight + bias (biased variance).
void layer_norm(const LayerNormArgs& a);

// --- RoPE (backend/cpu/rope.h) ----------------------------------------------------------------

// A rotation's frequency table on the device, uploaded from the CPU op's own table
// (ops::Rope::inv_freqs(), or inv_freqs_for(end) for dynamic NTK calls past max_position),
// so every RoPE variant (default, linear, llama3, longrope, YaRN, dynamic, proportional)
// rotates with exactly the CPU's frequencies.
class DeviceRope {
 public:
  DeviceRope() = default;
  // inv_freqs: dims/2 host values; dims even, > 0. Throws moex::Error otherwise.
  DeviceRope(const std::vector<float>& inv_freqs, int64_t dims, bool traditional,
             float input_scale);
  const float* inv_freqs() const { return inv_.as<const float>(); }  // device [dims/2]
  int64_t dims() const { return dims_; }
  bool traditional() const { return traditional_; }
  float input_scale() const { return input_scale_; }

 private:
  DeviceBuffer inv_;
  int64_t dims_ = 0;
  bool traditional_ = false;
  float input_scale_ = 1.f;
};

struct RopeArgs {
  const DeviceRope* rope = nullptr;
  float* x = nullptr;  // device [rows][heads][head_dim], rotated in place
  int64_t rows = 1, heads = 0, head_dim = 0;
  int64_t pos0 = 0;  // row r is at position pos0 + r
};
// Pairs (i, i + dims/2) or (2i, 2i+1) of the first dims features of every head rotate by
// (pos0 + r) * inv_freq[i] after scaling by input_scale; features past dims are left as they
// are. cos and sin are CUDA's sincosf (within 2 ulp of the C library's the CPU op calls).
void rope(const RopeArgs& a);

// --- weight matrices: linear layers and embedding tables (backend/cpu/linear.h) ---------------

// A matrix [n][k] in device memory, or a stack [groups][n][k] of them (multi_linear's one
// matrix per head): MLX affine-quantized (the layout of DeviceQuantWeights, one expert per
// matrix) or unquantized F32 / F16 / BF16 rows.
struct DeviceMatrixView {
  DeviceQuantWeights q;          // affine: q.w != nullptr, q.experts == groups
  const void* dense = nullptr;   // unquantized: [groups][n][k] elements of dense_dtype
  DType dense_dtype = DType::F32;
  int64_t n = 0, k = 0;
  int64_t groups = 1;            // matrices in the stack; 1 for linear and embedding_rows
  bool quantized() const { return q.w != nullptr; }
};

// Owns one matrix (or stack) on the device. upload() accepts the formats the CUDA MoE upload
// accepts (affine, bits 2/3/4/5/6/8, group 32/64/128, F32/F16/BF16 scales) and unquantized
// F32/F16/BF16; the fp modes (mxfp4 and kin) throw moex::Error naming `name`.
class DeviceMatrix {
 public:
  DeviceMatrix() = default;
  static DeviceMatrix upload(const quant::QuantMatrixView& m, const std::string& name);
  // A stack [v.experts][v.n][v.k] (ops::MultiLinearArgs::w: experts are the groups).
  static DeviceMatrix upload_stack(const kernels::QuantWeightsView& v, const std::string& name);
  const DeviceMatrixView& view() const { return view_; }

 private:
  DeviceMatrixView view_;
  DeviceProjection affine_;
  DeviceBuffer dense_;
};

struct LinearArgs {
  const DeviceMatrixView* w = nullptr;
  const float* bias = nullptr;  // device [n] or nullptr
  const float* x = nullptr;     // device [rows][k], 16-byte aligned
  int64_t rows = 1;
  float* out = nullptr;         // device [rows][n]; must not alias x
};
// out[r] = W x[r] + b for a single matrix (groups == 1). Affine rows run the MoE kernels' warp
// loop (warp_rows.cuh: each unit scale * sum(q x) + bias * sum(x)); unquantized rows are f32
// dot products of the widened elements, one warp per row.
void linear(const LinearArgs& a);
// Several linears of the same input rows (every part's x and rows equal; count <= 0 does
// nothing): one linear() launch per part, so each output is that call's bits by construction.
void linear_same_input(const LinearArgs* parts, int count);

struct MultiLinearArgs {
  const DeviceMatrixView* w = nullptr;  // a stack [groups][n][k]
  const float* x = nullptr;             // device [rows][groups][k], 16-byte aligned
  int64_t rows = 1;
  float* out = nullptr;                 // device [rows][groups][n]; must not alias x
};
// mlx-lm's MultiLinear (ops::multi_linear): out[r][g] = W[g] x[r][g], each (row, group) entry
// computed as linear() computes a row (the same kernels, matrix g of the stack).
void multi_linear(const MultiLinearArgs& a);

// out[i] = row tokens[i] of the table as f32, i < n (affine: scale * q + bias in f32, as
// ops::embedding_row). tokens: device [n]; out: device [n][k]. A token outside [0, table.n)
// gives a row of NaN.
void embedding_rows(const DeviceMatrixView& table, const int32_t* tokens, int64_t n, float* out);

// --- gated activations (kernels::apply_activation) ------------------------------------------

// out[i] = act(gate[i], up[i]) for i < n (gate unused, may be null, for kSquaredReLU); out
// may alias gate or up.
void gated_activation(kernels::Activation act, const float* gate, const float* up, float* out,
                      int64_t n);

// --- KV cache and attention (backend/cpu/attention.h) -----------------------------------------

// Keys and values of one attention layer in device memory, f32, the CPU cache's layout:
// [kv_heads][capacity][head_dim] each, so one head's keys (and values) are one contiguous
// stream. The length lives on the host (no device round trip to append). A keys-only cache
// (values = false, as the CPU KvCache's MLA mode) holds no values: values() is null, and
// each key row is an MLA latent row [latent_dim + rope_dim].

// Appends k, v (device [rows][kv_heads][head_dim]; v ignored, may be null, for a keys-only
// cache) at positions length .. length + rows - 1. Throws moex::Error ("context length
// exceeded") past the capacity, as KvCache::append.
void kv_append(KvCache& cache, const float* k, const float* v, int64_t rows);

// Floats of AttentionArgs::scores for rows x heads queries at positions up to pos0 + rows.
int64_t attention_scratch_floats(int64_t rows, int64_t heads, int64_t pos0);
// ops::attention's contract: query head h reads kv head h / (heads / kv_heads); row r at p
// attends to keys [attention_first_key(p, chunk, window), p]; softmax with the max
// subtracted (and the sink logit, if any), f32 sums; out = sum_t p_t v_t in key order.
// The cache (device buffers) must hold values. scores: device scratch of
// attention_scratch_floats(rows, heads, pos0) floats.
void attention(const AttentionArgs& a, float* scores);

// ops::mla_attention's contract (absorbed multi-head latent attention; the cache keys-only, one
// kv head of latent_dim + rope_dim, in device buffers): per head
// s_t = scale (q . row_t), p = softmax(s), out = sum_t p_t latent_t in key order. The
// attention kernel with every head on kv head 0 and the values the rows' first latent_dim
// features (one block per (row, head): the cache is read once per head).
void mla_attention(const MlaAttentionArgs& a, float* scores);

// --- the residual stream's elementwise ops (backend/cpu/stream_ops.h) -----------------------

void add_scaled(float* x, const float* y, int64_t n, float scale);
void scale_in_place(float* x, int64_t n, float s);
void sigmoid_gate(float* x, const float* gate, int64_t n);
void divide_and_softcap(float* x, int64_t n, float divisor, float cap);
void query_temperature(const QueryTemperatureArgs& a);
void split_halves(const float* src, float* first, float* second, int64_t rows, int64_t half);
void copy_columns(const CopyColumnsArgs& a);
// softplus as the CPU's max(x, 0) + log1p(exp(-|x|)) with CUDA's log1pf and expf.
void dt_softplus(const DtSoftplusArgs& a);
void delta_gates(const DeltaGatesArgs& a);

// --- greedy decode ---------------------------------------------------------------------------

// *index_device = the index of the first maximum of x[0..n) (device), NaN never chosen unless
// all are NaN (then 0; n == 0 gives 0), as ops::argmax.
void argmax(const float* x, int64_t n, int32_t* index_device);
// The same, copied back: the one device-to-host transfer of a greedy step. scratch_device
// holds one int32.
int32_t argmax_to_host(const float* x, int64_t n, int32_t* scratch_device);

}  // namespace moex::cuda::ops
