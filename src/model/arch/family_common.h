// Helpers shared by the family parsers in src/model/arch/: RoPE and eos parsing with the
// Hugging Face field names, the llama-style per-layer tensor names, and the config.json
// fields every synthetic preset writes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model_config.h"
#include "model/presets.h"

namespace moex::model::arch {

// A size field of config.json: a required integer in [lo, hi]; get_size_or returns `def` when
// the field is missing or null and checks [1, hi] otherwise. Errors name the file and field.
int64_t get_size(const nlohmann::json& j, const char* field, int64_t hi, const std::string& file,
                 int64_t lo = 1);
int64_t get_size_or(const nlohmann::json& j, const char* field, int64_t def, int64_t hi,
                    const std::string& file);

// How a family's mlx-lm model file derives head_dim.
enum class HeadDimRule {
  kHiddenOverHeads,         // hidden_size / num_attention_heads; a head_dim field is ignored
  kFieldOrHiddenOverHeads,  // head_dim if present, else hidden_size / num_attention_heads
  kField                    // head_dim is required
};

// Defaults of the decoder fields every family has (std::nullopt: required).
struct DecoderDefaults {
  std::optional<int64_t> hidden, layers, vocab, max_position, heads;
  std::optional<int64_t> kv_heads;  // ignored when kv_heads_default_to_heads
  bool kv_heads_default_to_heads = false;
  HeadDimRule head_dim = HeadDimRule::kFieldOrHiddenOverHeads;
};

// The one parser of those fields: hidden_size, num_hidden_layers, vocab_size,
// max_position_embeddings, num_attention_heads, num_key_value_heads and head_dim, each range
// checked against model::limits as it is read (so nothing is allocated from an absurd value).
void parse_decoder_dims(const nlohmann::json& j, const std::string& file, const DecoderDefaults& d,
                        ModelConfig& c);

// rope_theta (top level, or rope_parameters.rope_theta as newer configs write it; default
// `default_theta`) and rope_scaling (null/missing, or an object whose "type"/"rope_type" is
// default, linear, llama3, longrope/su, yarn or dynamic). longrope reads
// original_max_position_embeddings from rope_scaling or else from the top level.
RopeParams parse_rope(const nlohmann::json& cfg, const std::string& file, int64_t head_dim,
                      int64_t max_position, double default_theta, bool traditional);

// eos_token_id: an integer, a list of integers, or missing/null (empty result).
std::vector<int64_t> parse_eos(const nlohmann::json& cfg, const std::string& file);

// The opening every family parser shares: family (the registry name), model_type as
// config.json writes it, and source (the file, for messages).
ModelConfig begin_config(const char* family, const nlohmann::json& cfg, const std::string& file);

// The outer names and ids of a llama-style checkpoint, once c.tie_word_embeddings is set:
// model.embed_tokens, model.norm, lm_head (none when tied), eos_token_id, bos_token_id.
void set_llama_model_names(ModelConfig& c, const nlohmann::json& cfg, const std::string& file);

// Names of a llama-style layer under `prefix` ("model.layers.3"): input_layernorm,
// post_attention_layernorm, self_attn.{q,k,v,o}_proj (+ q_norm/k_norm if `qk_norm`).
void set_llama_attention_names(LayerModules& n, const std::string& prefix, bool qk_norm);

// MoE names under `moe` ("model.layers.3.mlp"): router `moe.<router>`, stacked experts
// `moe.<stacked>.{gate,up,down}_proj` (mlx-lm's SwitchGLU attribute: switch_mlp, or experts
// in dots1), and the per-expert Hugging Face names `moe.experts.{e}.<g>/<u>/<d>` (g/u/d:
// "gate_proj","up_proj","down_proj" or "w1","w3","w2").
void set_switch_mlp_names(LayerModules& n, const std::string& moe, const std::string& router,
                          const char* g, const char* u, const char* d,
                          const char* stacked = "switch_mlp");

// Dense SwiGLU MLP names `mlp.{gate,up,down}_proj`.
void set_dense_mlp_names(LayerModules& n, const std::string& mlp);
// Shared-expert MLP names `mlp.{gate,up,down}_proj` (e.g. "model.layers.3.mlp.shared_experts").
void set_shared_mlp_names(LayerModules& n, const std::string& mlp);

// mlx-lm's sanitize pops lm_head.weight when the embeddings are tied.
bool drops_tied_lm_head(const ModelConfig& c, std::string_view tensor);

// DeepSeek-V3's "noaux_tc" routing as mlx-lm's glm4_moe and dots1 read it, once n_group and
// topk_group are read: routed_scaling_factor (finite), norm_topk_prob, a bare (never quantized)
// router with an e_score_correction_bias, and the group checks below.
void set_noaux_tc_routing(ModelConfig& c, const nlohmann::json& cfg, const std::string& file);

// Group-limited routing (c.moe.n_group, c.moe.topk_group, already read): the groups split the
// experts (counted by `experts_field`) evenly into groups of at least
// c.moe.router.group_score_top (the experts a group's score adds up), topk_group <= n_group,
// and top_k fits in the groups kept. Errors name the file and fields.
void check_expert_groups(const ModelConfig& c, const std::string& file,
                         const char* experts_field);

// Fills layer i of `c` as a plain attention layer with the given FFN.
LayerPlan llama_layer_plan(const ModelConfig& c, FfnKind ffn, int64_t dff);

// Fields common to every synthetic config.json: architectures, model_type, the dims,
// torch_dtype, eos/bos ids, max_position_embeddings, vocab_size. Families add the rest.
nlohmann::json base_preset_config(const ModelPreset& p, const char* architecture);

// Synthetic longrope factor lists (head_dim/2 entries each, smooth and increasing like the
// real Phi-3.5 ones).
std::vector<double> synthetic_rope_factors(int64_t half, double lo, double hi);

// Attention softmax scale head_dim^-0.5.
double default_attn_scale(int64_t head_dim);

}  // namespace moex::model::arch
