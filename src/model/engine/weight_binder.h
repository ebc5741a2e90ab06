// Binds checkpoint tensors to the views the engine computes with, without copying: a module
// path becomes an ops::Linear (MLX affine-quantized when P.scales exists, else float), a
// float vector, or a stacked expert projection, in any weight format (quantized or F32/F16/
// BF16). Per-expert Hugging Face layouts are the one exception: they are stacked into owned
// buffers. Every mismatch is a moex::Error naming the
// tensor, what was expected and what was found.
#pragma once

#include "quant/format.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "io/checkpoint.h"
#include "io/quant_config.h"
#include "kernels/moe_contract.h"
#include "backend/cpu/float_vec.h"
#include "backend/cpu/linear.h"

namespace moex::model::engine {

enum class BiasMode { kNone, kRequired, kOptional };

class WeightBinder {
 public:
  WeightBinder(const io::Checkpoint& ckpt, std::optional<io::QuantConfig> quant);

  // Linear module `path` with logical weight [out][in] (float) or its quantized form.
  ops::Linear linear(const std::string& path, int64_t out, int64_t in, BiasMode bias);
  // A float tensor of exactly n elements (any 1-D or [n]-sized shape) as f32.
  ops::FloatVec vector(const std::string& tensor, int64_t n);
  // A float tensor of exactly this shape, flattened, as f32.
  ops::FloatVec tensor(const std::string& tensor, const std::vector<int64_t>& shape);
  bool has(const std::string& tensor) const { return ckpt_.find(tensor) != nullptr; }
  // The dtype of a tensor that has() (moex::Error naming it otherwise).
  DType dtype_of(const std::string& tensor) const { return ckpt_.require(tensor).dtype; }
  // The shape of a tensor that has() (moex::Error naming it otherwise).
  const std::vector<int64_t>& shape_of(const std::string& tensor) const {
    return ckpt_.require(tensor).shape;
  }

  // Stacked experts `path` ([experts][out][in], quantized or unquantized) as a kernel view.
  kernels::QuantWeightsView stacked(const std::string& path, int64_t experts, int64_t out,
                                    int64_t in);
  // Per-expert modules (pattern with "{e}") stacked into owned storage, same result.
  kernels::QuantWeightsView stack_experts(const std::string& pattern, int64_t experts,
                                          int64_t out, int64_t in);
  // An unquantized [experts][in][cols] tensor (inputs first, as PyTorch's fused expert
  // tensors), columns [col0, col0 + n) transposed into an owned [experts][n][in] stack.
  kernels::QuantWeightsView transposed_experts(const std::string& tensor, int64_t experts,
                                               int64_t in, int64_t cols, int64_t col0, int64_t n);
  // An unquantized [experts][rows][in] tensor's rows [row0, row0 + n) of every expert as a
  // stack: a view of the tensor when they are all its rows, else an owned copy (the gate or
  // up half of an outputs-first fused gate_up tensor).
  kernels::QuantWeightsView expert_rows(const std::string& tensor, int64_t experts, int64_t rows,
                                        int64_t in, int64_t row0, int64_t n);
  // DeepSeek's kv_b_proj Linear `path`, logical [heads * (nope + v)][latent] (per head nope
  // key rows, then v value rows), split as mlx-lm's deepseek_v3 sanitize does into an owned
  // float stack: keys: embed_q [heads][latent][nope] (the key rows transposed); else
  // unembed_out [heads][v][latent]. Of a quantized kv_b_proj (mlx_lm convert of deepseek_v2)
  // the value rows stay quantized (a copy of the packed rows, kv_b_value_rows) and the key rows
  // are dequantized to f32 (scale * q + bias with the scales and biases widened to f32, as
  // mlx-lm's quantized matmul forms them at f32 compute) before the transpose: embed_q holds
  // heads * latent * nope f32 values (4 MiB a layer for DeepSeek-V2-Lite instead of about
  // 0.6 MiB at 4 bits g64). The keys must be bound before the values.
  kernels::QuantWeightsView kv_b_split(const std::string& path, int64_t heads, int64_t nope,
                                       int64_t v, int64_t latent, bool keys);
  // gpt-oss's original layout: `<base>_blocks` U8 [experts][rows][in/32][16] (mxfp4 codes, the
  // bytes of MLX's packed rows) and `<base>_scales` U8 [experts][rows][in/32]. Rows row0,
  // row0 + stride, ... (n of them) as an mxfp4 stack: a view of the tensors when stride is 1
  // and n = rows, else an owned copy (gate/up, whose rows alternate in gate_up_proj).
  kernels::QuantWeightsView strided_mxfp4_experts(const std::string& base, int64_t experts,
                                                  int64_t rows, int64_t in, int64_t row0,
                                                  int64_t stride, int64_t n);
  // A float [experts][rows] tensor's entries row0, row0 + stride, ... (n per expert) as f32
  // [experts][n] (gpt-oss's gate_up_proj_bias, gate and up alternating).
  ops::FloatVec strided_rows(const std::string& tensor, int64_t experts, int64_t rows,
                             int64_t row0, int64_t stride, int64_t n);
  // Unquantized Linear `path` [out][in] with every column divided by its L2 norm over the out
  // rows + 1e-7, computed in f32 as MLX does (stored back in the tensor's dtype), an owned
  // copy. An Error when the module is quantized.
  ops::Linear column_normalized(const std::string& path, int64_t out, int64_t in);
  // Expert parallelism: the experts of each layer this process owns ([layer][expert], 1 =
  // owned; empty: all). Layouts copied at load (per-expert tensors, fused Hugging Face
  // tensors) then copy, and so read, only the owned experts; the others' rows stay unwritten.
  // bind_expert_layer(l) names the layer the next expert bindings are for.
  void restrict_experts(std::vector<std::vector<uint8_t>> keep) { keep_ = std::move(keep); }
  void bind_expert_layer(int64_t layer) { layer_ = layer; }
  // Bytes copied at load so far: stack_experts / transposed_experts stacks and
  // column_normalized heads (0 for a stacked checkpoint read as it is).
  int64_t stacked_copy_bytes() const { return copied_bytes_; }

 private:
  struct QuantParts {
    const io::TensorInfo *w = nullptr, *scales = nullptr, *biases = nullptr;  // no biases: fp modes
    int bits = 0, group_size = 0;
    quant::Mode mode = quant::Mode::kAffine;
    // `stack` matrices of n x k in this format: over the stored tensors, or over copies laid
    // out the same (codes, scales, biases; biases null where these have none).
    kernels::QuantWeightsView stack_view(int64_t stack, int64_t n, int64_t k) const;
    kernels::QuantWeightsView stack_view_of(const uint8_t* codes, const uint8_t* scale_bytes,
                                            const uint8_t* bias_bytes, int64_t stack, int64_t n,
                                            int64_t k) const;
    // One rows x k matrix over the stored tensors.
    quant::QuantMatrixView matrix_view(int64_t rows, int64_t k) const;
  };
  // Per-expert unquantized weights (name_of(e) + ".weight") copied into one stack.
  kernels::QuantWeightsView stack_float_experts(const std::function<std::string(int64_t)>& name_of,
                                                int64_t experts, int64_t out, int64_t in);
  // Validates P.weight/P.scales/P.biases for leading dims `lead` and input width `in`.
  QuantParts quant_parts(const std::string& path, const std::vector<int64_t>& lead, int64_t in);
  // kv_b_split's values of a quantized kv_b_proj: its value rows copied, still quantized.
  kernels::QuantWeightsView kv_b_value_rows(const QuantParts& p,
                                            const std::vector<const io::TensorInfo*>& stored,
                                            int64_t heads, int64_t nope, int64_t v,
                                            int64_t latent);

  // n bytes of owned storage, uninitialized: an expert another rank owns is never written, so
  // its pages are never touched (make_unique_for_overwrite; large blocks come from mmap).
  uint8_t* allocate(size_t n);
  // Whether expert e of the layer being bound is copied (restrict_experts).
  bool wants(int64_t e) const;

  const io::Checkpoint& ckpt_;
  std::optional<io::QuantConfig> quant_;
  std::deque<std::unique_ptr<uint8_t[]>> owned_;  // stacked per-expert copies (stable addresses)
  int64_t copied_bytes_ = 0;
  std::vector<std::vector<uint8_t>> keep_;  // [layer][expert]: restrict_experts' masks
  int64_t layer_ = -1;                      // the layer whose experts are being bound
};

// "a x b x c" for messages.
std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace moex::model::engine
