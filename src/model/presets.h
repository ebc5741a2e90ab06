// Synthetic-model presets: the real shapes of docs/background.md §4 (and tiny versions for tests),
// used by `moex make-model`, `moex bench-moe --preset` and the sweep.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moex::model {

struct ModelPreset {
  std::string name;        // "qwen3-30b-a3b", "tiny-qwen3-moe", ...
  std::string model_type;  // config.json model_type, one a family of arch/families.def reads
  int64_t hidden = 0;
  int64_t moe_dff = 0;         // expert intermediate size (Dff)
  int64_t experts = 0;
  int64_t top_k = 0;
  int64_t shared_dff = 0;      // 0: no shared expert
  int64_t dense_dff = 0;       // intermediate size of dense layers, 0 if none
  int64_t layers = 0;
  int64_t heads = 0, kv_heads = 0, head_dim = 0;
  int64_t vocab = 0;
  int64_t max_position = 4096;
  std::string activation = "swiglu";  // swiglu | geglu | relu2 | swiglu_oai
  bool tiny = false;
  // Added by the model-family owner (see presets.cc for the values of each preset):
  int64_t dense_layers = 0;                // leading dense-FFN layers (LFM2: 2)
  std::vector<int64_t> attention_layers;   // hybrid models: attention layer indices (others
                                           // are short-conv); empty = every layer attends
  bool tie_embeddings = false;
  bool expert_linear_bias = false;         // OLMoE mlp_bias: biases on every expert projection
  // Gated DeltaNet hybrids (Qwen3-Next): the linear_* heads and head dims, and every
  // full_attention_interval-th layer attends (the others are Gated DeltaNet layers).
  int64_t linear_k_heads = 0, linear_v_heads = 0, linear_k_head_dim = 0, linear_v_head_dim = 0;
  int64_t full_attention_interval = 0;
  // Nemotron-H: the block pattern (M Mamba-2, * attention, - MLP, E MoE; one character per
  // layer) and the Mamba-2 heads, head dim, state size and groups.
  std::string hybrid_pattern;
  int64_t mamba_heads = 0, mamba_head_dim = 0, ssm_state = 0, mamba_groups = 0;
  // Multi-head latent attention (DeepSeek-V3): q LoRA rank (0: a plain q_proj), kv LoRA rank,
  // the per-head no-RoPE / RoPE query-key dims and the value dim.
  int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
  std::string description;                 // one line for --list-presets
};

// Total weight count (parameters) of a preset, unquantized; for listings.
int64_t preset_parameter_count(const ModelPreset& p);

// The eos id a synthetic checkpoint's config.json names: <|endoftext|> of the synthetic
// tokenizer make-model writes (tokenizer/synthetic_vocab.h: specials take the highest ids).
// There is no bos token.
int64_t synthetic_eos_id(int64_t vocab);

const std::vector<ModelPreset>& all_presets();
const ModelPreset* find_preset(std::string_view name);  // nullptr if unknown

}  // namespace moex::model
