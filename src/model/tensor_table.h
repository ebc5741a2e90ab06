// The tensor table of a model: every module (Linear, Embedding, norm, conv, bare tensor) a
// checkpoint of a ModelConfig holds, with its mlx-lm path, float shape and role; and its
// expansion into tensors (weight / scales / biases / bias) once each module's quantization
// is known. Names and shapes follow mlx-lm (stacked experts, [out, in] weights).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "io/quant_config.h"
#include "quant/format.h"
#include "model/model_config.h"

namespace moex::model {

enum class ModuleKind {
  kLinear,     // P.weight [out, in] or stacked [E, out, in]; optional P.bias [out] / [E, out]
  kEmbedding,  // P.weight [vocab, hidden]
  kNorm,       // P.weight [dim] (RMSNorm)
  kLayerNorm,  // P.weight, P.bias [dim]
  kConv1d,     // P.weight [channels, kernel, 1] (MLX layout, depthwise); optional P.bias
  kTensor      // a bare tensor; path is the full tensor name (LFM2 expert_bias)
};

enum class TensorRole {
  kEmbedding,
  kLmHead,
  kNorm,
  kAttention,
  kShortConv,
  kLinearAttention,   // Gated DeltaNet (Qwen3-Next linear_attn)
  kStateSpace,        // Mamba-2 (Nemotron-H mixer)
  kRouter,            // router Linear [E, H]
  kRouterBias,        // LFM2 expert_bias [E]
  kExperts,           // stacked routed experts (or one expert of a per-expert HF layout)
  kSharedExpert,      // shared expert MLP
  kSharedExpertGate,  // Qwen2-MoE Linear(H, 1)
  kDenseFfn
};

enum class ExpertProj : uint8_t { kNone, kGate, kUp, kDown };

// The typed place a module binds into (engine/model_weights.h): every loader, checker, writer
// and counter walks the same table, and the engine's binder dispatches on this.
enum class Slot : uint8_t {
  kEmbedding, kLmHead, kFinalNorm,
  kInputNorm, kPostNorm,                          // per layer
  kQ, kK, kV, kO, kQNorm, kKNorm, kSinks,         // attention
  kQkv,                                           // fused [q; k; v] rows of one Linear
  kConvIn, kConv, kConvOut,                       // LFM2 short convolution
  // Gated DeltaNet: Qwen3-Next's interleaved projections or Qwen3.5's separate ones, the
  // depthwise conv, dt_bias / A_log [v_heads], the gated norm [v_head_dim], out_proj
  kGdnQkvz, kGdnBa, kGdnQkv, kGdnZ, kGdnB, kGdnA, kGdnConv, kGdnDtBias, kGdnALog, kGdnNorm,
  kGdnOut,
  // Mamba-2: in_proj, the depthwise conv (+ bias), dt_bias / A_log / D [heads], the gated
  // norm [heads * head_dim], out_proj
  kMambaIn, kMambaConv, kMambaDtBias, kMambaALog, kMambaD, kMambaNorm, kMambaOut,
  // Multi-head latent attention (q_proj / o_proj bind as kQ / kO): the q LoRA pair and its
  // norm, kv_a_proj_with_mqa and its norm, the per-head up-projections (stacked [heads, out,
  // in] like experts, mlx-lm's MultiLinear), or kv_b_proj as one Linear [heads * (nope + v),
  // kv_lora] (mlx-lm's deepseek_v2), split into the two when bound
  kMlaQA, kMlaQANorm, kMlaQB, kMlaKvA, kMlaKvANorm, kMlaEmbedQ, kMlaUnembedOut, kMlaKvB,
  kDenseGate, kDenseUp, kDenseDown,               // dense FFN
  kRouter, kExpertBias, kExperts,                 // MoE (kExperts: see ModuleSpec::proj)
  kSharedGate, kSharedUp, kSharedDown, kSharedExpertGate,
  // Gemma-4: output norms of the attention / FFN / dense branch / experts, the experts' input
  // norm, the router's input norm weight [H] and per-expert score scale [E], the layer scalar
  kAttnOutNorm, kFfnOutNorm, kDenseOutNorm, kExpertsInNorm, kExpertsOutNorm,
  kRouterInputScale, kRouterExpertScale, kLayerScalar
};

const char* module_kind_name(ModuleKind k);
const char* tensor_role_name(TensorRole r);

struct ModuleSpec {
  std::string path;
  ModuleKind kind = ModuleKind::kLinear;
  TensorRole role = TensorRole::kAttention;
  int64_t layer = -1;           // -1: not in a layer (embedding, final norm, lm_head)
  std::vector<int64_t> shape;   // the float weight's shape
  bool bias = false;            // Linear / Conv1d with a bias tensor
  bool keep_f32 = false;        // stored in float32 whatever the model dtype (expert_bias)
  ExpertProj proj = ExpertProj::kNone;
  std::string hf_pattern;       // stacked experts: per-expert HF module name with "{e}", or
                                // (no "{e}") the fused HF tensor holding them (hf_fused)
  bool residual_out = false;    // output projection adding into the residual stream
                                // (o_proj, conv out_proj, down projections)
  Slot slot = Slot::kEmbedding;
  bool float_only = false;      // a Linear that mlx-lm never quantizes (GLM-4.5's bare router)
  // How hf_pattern (no "{e}": one fused tensor) lays out the experts.
  HfFusedExperts hf_fused = HfFusedExperts::kNone;

  bool quantizable() const {
    return !float_only && (kind == ModuleKind::kLinear || kind == ModuleKind::kEmbedding);
  }
  int64_t in_dim() const { return shape.empty() ? 0 : shape.back(); }
  // Output rows of the fused Hugging Face tensor an expert module reads (hf_fused): gate and
  // up share one of 2 x Dff rows, down has its own.
  int64_t hf_fused_rows() const { return proj == ExpertProj::kDown ? shape[1] : 2 * shape[1]; }
  int64_t num_experts() const { return shape.size() == 3 && kind == ModuleKind::kLinear ? shape[0] : 1; }
  int64_t parameter_count() const;  // weight + bias elements
};

// Every module of the model, layer by layer in checkpoint order (embedding first, then
// layers 0..N-1, final norm, lm_head).
std::vector<ModuleSpec> module_table(const ModelConfig& cfg);

enum class TensorPart { kWeight, kScales, kBiases, kBias };
const char* tensor_part_name(TensorPart p);

struct TensorRecord {
  std::string name;    // full tensor name: module path + ".weight" / ".scales" / ...
  std::string module;  // owning module path
  TensorPart part = TensorPart::kWeight;
  DType dtype = DType::BF16;
  std::vector<int64_t> shape;
  TensorRole role = TensorRole::kAttention;
  int64_t layer = -1;
  ExpertProj proj = ExpertProj::kNone;
  int bits = 0, group_size = 0;  // the module's quantization; 0 = float module
  quant::Mode mode = quant::Mode::kAffine;
  int64_t num_experts = 1;       // leading expert axis of stacked expert tensors

  int64_t numel() const;
  int64_t bytes() const;
};

// Quantization of one module, or nullopt to keep it in float.
using QuantDecision = std::function<std::optional<io::ModuleQuant>(const ModuleSpec&)>;

// The tensors of `modules` with float tensors in `float_dtype` (F32/F16/BF16) and scales /
// biases in the same dtype. A quantized module P becomes P.weight (U32, last dim in*bits/32),
// P.scales and P.biases (last dim in/group_size; fp modes: U8 scales and no biases), and
// keeps P.bias in float. Throws
// moex::Error naming the module if a decision does not fit (in_dim % group_size, bits).
std::vector<TensorRecord> expand_tensors(const std::vector<ModuleSpec>& modules, DType float_dtype,
                                         const QuantDecision& decide);

// The weight shape module m is checked and bound with, given the shape `found` in the
// checkpoint (nullptr: absent): m.shape, except that a depthwise Conv1d may be stored in
// PyTorch's [channels, 1, kernel] (a Hugging Face checkpoint), which holds the same bytes in
// the same order as MLX's [channels, kernel, 1] (mlx-lm's sanitize transposes one into the
// other).
std::vector<int64_t> stored_weight_shape(const ModuleSpec& m, const std::vector<int64_t>* found);

// Looks up a module by path (nullptr if absent).
const ModuleSpec* find_module(const std::vector<ModuleSpec>& modules, const std::string& path);

}  // namespace moex::model
