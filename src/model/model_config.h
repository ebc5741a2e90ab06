// ModelConfig: the family-independent description of an MoE decoder that every family parser
// (src/model/arch/<family>.cc) produces from config.json and that the engine, the tensor table,
// make-model and inspect consume. Field meanings follow mlx-lm's model files (the reference).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "moe/router.h"

namespace moex::model {

// Upper bounds on every size field of a config (docs/config_limits.md gives the real models'
// values behind each). With every field inside its bound, no product the engine forms (q_dim,
// experts x Dff x hidden, vocab x hidden, their byte counts) can overflow int64_t, so a hostile
// config.json is refused here instead of wrapping into a plausible width.
namespace limits {
inline constexpr int64_t kMaxHidden = int64_t{1} << 17;       // 131072
inline constexpr int64_t kMaxLayers = 1024;
inline constexpr int64_t kMaxVocab = int64_t{1} << 22;        // 4194304
inline constexpr int64_t kMaxHeads = 4096;
inline constexpr int64_t kMaxHeadDim = 4096;
inline constexpr int64_t kMaxExperts = int64_t{1} << 14;      // 16384
inline constexpr int64_t kMaxDff = int64_t{1} << 20;          // 1048576
inline constexpr int64_t kMaxPosition = int64_t{1} << 30;     // 1073741824 tokens
inline constexpr int64_t kMaxConvKernel = 64;
}  // namespace limits

enum class NormKind {
  kRmsNorm,   // x * rsqrt(mean(x^2) + eps) * weight
  kLayerNorm  // (x - mean) * rsqrt(var + eps) * weight + bias   (Phi-MoE)
};

// How query/key vectors are normalized before attention.
enum class QkNormKind {
  kNone,
  kPerHead,          // RMSNorm over head_dim with a [head_dim] weight, before RoPE (Qwen3, LFM2)
  kFullWidth,        // RMSNorm over heads*head_dim with a [heads*head_dim] weight, before the
                     // head reshape and RoPE (OLMoE)
  kPerHeadNoWeight,  // RMSNorm over head_dim, no weight, eps = qk_norm_eps, AFTER RoPE; only
                     // on RoPE layers (Llama-4)
  kPerHeadAfterRope  // RMSNorm over head_dim with a [head_dim] weight, AFTER RoPE (Hunyuan)
};

enum class RopeKind {
  kNone,      // layer without rotary embedding (Llama-4 NoPE layers)
  kDefault,   // theta^(-2i/d)
  kLinear,    // positions scaled by 1/factor
  kLlama3,    // Llama-3 frequency smoothing (factor, low/high_freq_factor, original_max_pos)
  kLongRope,  // Phi "su"/longrope: freqs * long_factor[i], input scaled by mscale (mlx-lm
              // SuScaledRoPE always uses long_factor; short_factor kept for completeness)
  kYarn,      // YaRN (mlx-lm YarnRoPE): ramped frequencies, mscale on the rotated features
  kDynamic,   // dynamic NTK (mlx-lm DynamicNTKScalingRoPE): base grows past max_position
  kProportional  // mlx-lm ProportionalRoPE (Gemma-4 full layers): pairs (i, i + d/2) of the
                 // whole head, frequency factor * theta^(2i/d) for i < rotated_dims/2, the
                 // other pairs unrotated
};

struct RopeParams {
  RopeKind kind = RopeKind::kDefault;
  double theta = 10000.0;
  bool traditional = false;  // true: rotate interleaved pairs (2i, 2i+1); false: halves
  int64_t dims = 0;          // rotated dims (= head_dim for every supported family)
  double factor = 1.0;       // linear / llama3 / yarn / dynamic
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  int64_t original_max_position = 0;                      // llama3, longrope, yarn
  std::vector<double> short_factor, long_factor;          // longrope, head_dim/2 each
  double short_mscale = 0.0, long_mscale = 0.0;           // longrope; 0 = derived
  double beta_fast = 32.0, beta_slow = 1.0;               // yarn (mlx-lm's defaults)
  double mscale = 1.0, mscale_all_dim = 0.0;              // yarn
  int64_t rotated_dims = 0;  // kProportional: int(head_dim * partial_rotary_factor)
  // The scale applied to q/k before rotation (longrope mscale; 1 otherwise).
  double input_scale = 1.0;
};


// The gated activation of the routed experts (kernels::Activation's gated kinds).
enum class ExpertActivation {
  kSwiGLU,    // silu(gate) * up
  kSwiGLUOai,  // gpt-oss: min(gate,7) * sigmoid(1.702 min(gate,7)) * (clip(up,-7,7) + 1)
  kGeGLU,      // gelu_tanh(gate) * up (Gemma-4)
  kReLU2       // relu(up)^2, no gate projection (Nemotron-H's experts and MLPs)
};

enum class MixerKind {
  kAttention,  // softmax attention with a KV cache
  kShortConv,  // LFM2 gated short convolution (in_proj -> B*x -> depthwise conv -> C*y -> out_proj)
  kGatedDeltaNet,  // Qwen3-Next linear attention: causal conv + gated delta rule recurrence
  kMamba2,         // Nemotron-H Mamba-2: causal conv + selective state-space recurrence
  kMla,            // DeepSeek-V3 multi-head latent attention: a compressed KV latent + decoupled RoPE key
  kNone            // no mixer: the layer is its FFN alone (Nemotron-H's 'E' and '-' blocks)
};

// kNone: no FFN, the layer is its mixer alone (Nemotron-H's 'M' and '*' blocks).
enum class FfnKind { kDense, kMoe, kNone };

// How a Hugging Face checkpoint fuses its experts (LayerModules::hf_experts_gate_up / _down;
// docs/families.md under each family).
enum class HfFusedExperts : uint8_t {
  kNone,
  kInputsFirst,   // Llama-4: gate_up [E, H, 2*Dff] (gate columns, then up), down [E, Dff, H]
  kOutputsFirst,  // Granite input_linear, Gemma-4 experts.gate_up_proj: [E, 2*Dff, H] (gate
                  // rows, then up), down [E, H, Dff]
  kInterleavedMxfp4  // gpt-oss: mxfp4 `<name>_blocks` [E, rows, in/32, 16] and `_scales`
                     // [E, rows, in/32] plus `_bias` [E, rows]; gate and up rows alternate
};

// Tensor-module paths of one layer in the checkpoint (mlx-lm names, no ".weight" suffix).
// Empty string: the module does not exist in this layer.
struct LayerModules {
  std::string input_norm, post_norm;               // pre-mixer and pre-FFN norms
  std::string q, k, v, o, q_norm, k_norm;          // attention
  std::string qkv;  // one fused Linear [q; k; v] (Bailing's query_key_value); q, k, v empty
  std::string sinks;                               // gpt-oss attention sinks [heads]: full tensor name
  std::string conv_in, conv, conv_out;             // short conv (conv: Conv1d [H, L, 1])
  // Gated DeltaNet (linear_attn.*): Qwen3-Next's per-key-head interleaved in_proj_qkvz and
  // in_proj_ba, or Qwen3.5's separate in_proj_qkv / _z / _b / _a; conv1d [C, L, 1]; dt_bias
  // and A_log [v_heads] (full tensor names); the gated RMSNorm [v_head_dim]; out_proj.
  std::string gdn_qkvz, gdn_ba, gdn_qkv, gdn_z, gdn_b, gdn_a;
  std::string gdn_conv, gdn_dt_bias, gdn_a_log, gdn_norm, gdn_out;
  // Mamba-2 (Nemotron-H mixer.*): in_proj [z; xBC; dt], conv1d [C, L, 1] (+ bias), dt_bias,
  // A_log and D [heads] (full tensor names), the group-wise gated RMSNorm [heads * head_dim],
  // out_proj.
  std::string mamba_in, mamba_conv, mamba_dt_bias, mamba_a_log, mamba_d, mamba_norm, mamba_out;
  // Multi-head latent attention (self_attn.*; q_proj and o_proj are q and o above): q LoRA
  // q_a_proj -> q_a_layernorm -> q_b_proj (empty without one: q_proj), kv_a_proj_with_mqa and
  // kv_a_layernorm, and the per-head up-projections mlx-lm's sanitize splits kv_b_proj into,
  // embed_q [heads, kv_lora_rank, nope] and unembed_out [heads, v_head_dim, kv_lora_rank].
  std::string mla_q_a, mla_q_a_norm, mla_q_b, mla_kv_a, mla_kv_a_norm;
  std::string mla_embed_q, mla_unembed_out;
  std::string mla_kv_b;  // the Hugging Face kv_b_proj the two are split from
  std::string dense_gate, dense_up, dense_down;    // dense FFN
  std::string router, expert_bias;                 // MoE router [E, H]; expert_bias: full tensor name
  std::string experts_gate, experts_up, experts_down;  // stacked [E, Dff, H] / [E, H, Dff]
  std::string shared_gate, shared_up, shared_down;     // shared expert MLP
  std::string shared_expert_gate;                      // Qwen2-MoE sigmoid gate Linear(H, 1)
  // Unstacked Hugging Face per-expert layout, "{e}" stands for the expert index
  // (e.g. "model.layers.3.block_sparse_moe.experts.{e}.w1"); empty if not applicable.
  std::string hf_expert_gate, hf_expert_up, hf_expert_down;
  // Or one fused Hugging Face tensor for gate and up and one for down (full tensor names),
  // laid out as hf_fused says; empty otherwise.
  std::string hf_experts_gate_up, hf_experts_down;
  HfFusedExperts hf_fused = HfFusedExperts::kNone;
  // Gemma-4 ("sandwich" norms and the parallel dense + MoE block), empty elsewhere:
  std::string attn_out_norm;     // RMSNorm of the attention output before the residual add
  std::string ffn_out_norm;      // RMSNorm of the FFN output before the residual add
  std::string dense_out_norm;    // RMSNorm of the parallel dense MLP's output
  std::string experts_in_norm;   // RMSNorm of the residual that feeds the routed experts
  std::string experts_out_norm;  // RMSNorm of the routed experts' output
  std::string router_input_scale;   // [H] full tensor name: the router's input RMSNorm weight,
                                    // times hidden^-0.5 (router reads the raw residual)
  std::string router_expert_scale;  // [E] full tensor name: per-expert score multiplier
  std::string layer_scalar;         // [1] full tensor name: the residual is multiplied by it
};

struct LayerPlan {
  MixerKind mixer = MixerKind::kAttention;
  bool use_rope = true;           // false on Llama-4 NoPE layers
  bool chunked_attention = false; // Llama-4 local layers: attend within attention_chunk_size
  bool qk_norm = false;           // this layer applies ModelConfig::qk_norm
  bool attn_temperature = false;  // Llama-4 NoPE layers: q *= log(floor((pos+1)/floor_scale)+1)*attn_scale+1
  int64_t sliding_window = 0;     // > 0: attend to the last sliding_window positions (gpt-oss)
  FfnKind ffn = FfnKind::kMoe;
  int64_t ffn_dff = 0;            // dense intermediate size, or the expert Dff for MoE layers
  // MoE layers that also run a dense MLP on the same normed input and add the two (Gemma-4):
  // its intermediate size (names dense_gate/up/down); 0: none.
  int64_t parallel_dense_dff = 0;
  // Per-layer attention geometry (Gemma-4's full layers): 0 = ModelConfig's.
  int64_t head_dim = 0, kv_heads = 0;
  bool values_from_keys = false;  // no v_proj: the values are the raw k_proj output
  bool value_norm = false;        // values RMSNorm'd over head_dim without a weight (qk_norm_eps)
  // Qwen3-Next gated attention: q_proj gives [heads][2 * head_dim] (query, then gate, per
  // head); the attention output is multiplied by sigmoid(gate) before o_proj.
  bool attn_output_gate = false;
  std::optional<RopeParams> rope; // this layer's RoPE; absent: ModelConfig::rope
  LayerModules names;
};

// Gated DeltaNet geometry (Qwen3-Next linear_* fields). conv channels = 2 * key_dim + value_dim.
struct GatedDeltaParams {
  int64_t k_heads = 0, v_heads = 0, k_head_dim = 0, v_head_dim = 0, conv_kernel = 0;
  // The A_log module holds A = -exp(A_log) itself (llama.cpp's ssm_a, which its converter
  // forms): taken as it is instead of exponentiated (GGUF files).
  bool a_log_holds_a = false;
  // A Qwen3.5 GGUF file stores the value heads tiled (value head j of key head g at
  // j * k_heads + g) for ggml's broadcast: the binder puts them back in grouped order
  // (gguf_v_tiled); out_proj's input columns too unless v_tiled_out, where the layer reorders
  // its input to out_proj into the file's order instead (a quantized out_proj, whose columns
  // cannot move without requantizing).
  bool gguf_v_tiled = false, v_tiled_out = false;
  int64_t key_dim() const { return k_heads * k_head_dim; }
  int64_t value_dim() const { return v_heads * v_head_dim; }
  int64_t conv_dim() const { return 2 * key_dim() + value_dim(); }
};

// Mamba-2 geometry (Nemotron-H mamba_* fields). The conv runs over [x; B; C]:
// conv_dim = heads * head_dim + 2 * groups * state_dim channels.
struct Mamba2Params {
  int64_t heads = 0, head_dim = 0, state_dim = 0, groups = 0, conv_kernel = 0;
  bool conv_bias = false, proj_bias = false;  // use_conv_bias; mamba_proj_bias (in/out_proj)
  bool a_log_holds_a = false;  // as GatedDeltaParams::a_log_holds_a (GGUF ssm_a)
  double dt_min = 0.0, dt_max = 0.0;          // time_step_limit: dt clipped to [min, max]
  int64_t inner() const { return heads * head_dim; }
  int64_t conv_dim() const { return inner() + 2 * groups * state_dim; }
  int64_t in_proj_dim() const { return inner() + conv_dim() + heads; }  // z, xBC, dt
};

// Multi-head latent attention geometry (DeepSeek-V3 fields). q_lora_rank 0: a plain q_proj.
// The cache holds kv_lora_rank + rope_dim floats per token (the normed latent, the rotated
// decoupled key), shared by every head.
struct MlaParams {
  int64_t q_lora_rank = 0, kv_lora_rank = 0, nope_dim = 0, rope_dim = 0, v_head_dim = 0;
  int64_t q_head_dim() const { return nope_dim + rope_dim; }
  int64_t cache_dim() const { return kv_lora_rank + rope_dim; }
};

struct MoeParams {
  int64_t num_experts = 0;
  int64_t top_k = 0;
  int64_t expert_dff = 0;
  // The routing rule, filled by the family's arch file (moe/router.h has the rules and each
  // family's constructor). Its expert_bias and expert_scale come from tensors: the engine
  // fills them when it binds the weights (use_expert_bias, router_expert_scale say whether the
  // family has them).
  moe::RouterConfig router;
  bool use_expert_bias = false;       // a selection bias tensor (LFM2, GLM-4.5, MiniMax, ...)
  bool router_expert_scale = false;   // a per-expert score scale tensor (Gemma-4)
  bool router_unquantized = false;      // GLM-4.5: the router is a bare weight, never quantized
  bool expert_linear_bias = false;    // OLMoE mlp_bias: switch_mlp.*.bias [E, out]
  bool router_bias = false;           // gpt-oss: the router Linear has a bias [E]
  ExpertActivation activation = ExpertActivation::kSwiGLU;
  int64_t shared_dff = 0;             // 0: no shared expert
  ExpertActivation shared_activation = ExpertActivation::kSwiGLU;  // kReLU2: up/down only
  bool shared_expert_gated = false;   // Qwen2-MoE: out += sigmoid(gate(x)) * shared(x)
  bool shared_expert_input_scaled = false;  // Llama-4: routed experts get x * score; shared gets x
};

struct ModelConfig {
  std::string family;      // registry name, e.g. "qwen3_moe"
  std::string model_type;  // config.json model_type as written ("llama4" for Llama-4)
  std::string source;      // the file it was parsed from, for messages

  int64_t hidden = 0;
  int64_t vocab = 0;
  int64_t num_layers = 0;
  int64_t max_position = 0;

  // Attention (shared by all attention layers).
  int64_t heads = 0, kv_heads = 0, head_dim = 0;
  bool q_bias = false, k_bias = false, v_bias = false, o_bias = false;
  QkNormKind qk_norm = QkNormKind::kNone;
  double qk_norm_eps = 1e-6;
  double attn_scale = 0.0;  // softmax scale, head_dim^-0.5
  bool attention_sinks = false;  // gpt-oss: a learned softmax logit per head ([heads] tensor)
  RopeParams rope;
  int64_t attention_chunk_size = 0;  // Llama-4 chunked layers
  double attn_temperature_floor_scale = 8192.0, attn_temperature_scale = 0.1;

  // Short convolution (LFM2).
  int64_t conv_kernel = 0;
  bool conv_bias = false;

  // Gated DeltaNet layers (Qwen3-Next).
  GatedDeltaParams gdn;
  // Mamba-2 layers (Nemotron-H).
  Mamba2Params mamba;
  // Multi-head latent attention layers (DeepSeek-V3); the softmax scale is attn_scale.
  MlaParams mla;

  NormKind norm = NormKind::kRmsNorm;
  double norm_eps = 1e-6;

  MoeParams moe;
  int64_t dense_dff = 0;  // intermediate size of dense FFN layers (0 if none)

  // Scalar multipliers of the residual stream (Granite's muP factors; 1 elsewhere): the
  // embedding rows are multiplied by embedding_scale, each layer adds residual_scale * (its
  // attention / FFN output), and the logits are divided by logits_divisor.
  double embedding_scale = 1.0;
  double residual_scale = 1.0;
  double logits_divisor = 1.0;
  // > 0: logits = tanh(logits / cap) * cap after the head (Gemma-4 final_logit_softcapping).
  double final_logit_softcap = 0.0;
  // The activation of dense (and parallel dense) MLP layers (kReLU2: no gate_proj).
  ExpertActivation dense_activation = ExpertActivation::kSwiGLU;

  bool tie_word_embeddings = false;
  // Qwen3-Next: a checkpoint in the Hugging Face per-expert layout stores its zero-centred
  // RMSNorm weights (input/post-attention/final norms, q/k norms) as w - 1; mlx-lm's sanitize
  // adds 1 to them when it stacks the experts, and so does the binder.
  bool hf_layout_norms_plus_one = false;
  bool lm_head_bias = false;  // Phi-MoE
  // Bailing norm_head: every column of a float lm_head weight is divided at load by its L2
  // norm over the vocabulary + 1e-7, as mlx-lm's sanitize does (a quantized head was
  // normalized by the converter and is read as it is).
  bool lm_head_column_norm = false;
  // num_nextn_predict_layers (DeepSeek-V3): multi-token-prediction layers stored after the last
  // one, which plain decoding drops (model/mtp_plan.h runs them under --spec mtp).
  int64_t nextn_layers = 0;
  std::string embed_name;       // "model.embed_tokens"
  std::string final_norm_name;  // "model.norm"
  std::string lm_head_name;     // "lm_head"; empty when tied (the embedding is the head)

  std::vector<int64_t> eos_token_ids;
  int64_t bos_token_id = -1;

  std::vector<LayerPlan> layers;

  int64_t num_moe_layers() const;
  int64_t q_dim() const { return heads * head_dim; }
  int64_t kv_dim() const { return kv_heads * head_dim; }
  // The attention geometry of one layer (LayerPlan overrides, else the model's).
  int64_t layer_head_dim(int64_t l) const;
  int64_t layer_kv_heads(int64_t l) const;
  int64_t layer_q_dim(int64_t l) const { return heads * layer_head_dim(l); }
  int64_t layer_kv_dim(int64_t l) const { return layer_kv_heads(l) * layer_head_dim(l); }
  const RopeParams& layer_rope(int64_t l) const;
};

const char* norm_kind_name(NormKind k);
const char* qk_norm_kind_name(QkNormKind k);
const char* rope_kind_name(RopeKind k);
const char* expert_activation_name(ExpertActivation a);  // "swiglu", "swiglu_oai"
const char* mixer_kind_name(MixerKind k);
const char* ffn_kind_name(FfnKind k);

// Structural checks every family config must pass (positive dims, heads divisible by kv
// heads, top_k <= experts, one plan per layer, names present for what the plan uses).
// Throws moex::Error naming cfg.source and the offending field.
void validate_model_config(const ModelConfig& cfg);

// The decode state one sequence holds: KV cache bytes per token of context over the attention
// layers, their elements of `kv` (F32 or F16, backend/kv_cache_type.h; MLA layers' compressed
// latent and rotated key stay f32), and the fixed bytes of the recurrent layers' f32 states
// (LFM2 short-conv, Gated DeltaNet conv + delta-rule state) whatever the context.
int64_t kv_cache_bytes_per_token(const ModelConfig& cfg, DType kv = DType::F32);
// What the MLA layers' cache would take per token as full per-head keys and values
// (heads x (nope + rope + v_head_dim) f32 each); 0 without MLA layers.
int64_t mla_full_kv_bytes_per_token(const ModelConfig& cfg);
int64_t recurrent_state_bytes(const ModelConfig& cfg);

// One line per layer: "L3: attention(rope) + moe 128x768 top-8 softmax_topk_renorm".
std::string describe_layer(const ModelConfig& cfg, int64_t layer);

}  // namespace moex::model
