// Helpers shared by the family parsers in src/model/arch/: RoPE and eos parsing with the
// Hugging Face field names, the llama-style per-layer tensor names, and the config.json
// fields every synthetic preset writes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model_config.h"
#include "model/presets.h"

namespace moex::model::arch {

// rope_theta (top level, or rope_parameters.rope_theta as newer configs write it; default
// `default_theta`) and rope_scaling (null/missing, or an object whose "type"/"rope_type" is
// default, linear, llama3, longrope/su, yarn or dynamic). longrope reads
// original_max_position_embeddings from rope_scaling or else from the top level.
RopeParams parse_rope(const nlohmann::json& cfg, const std::string& file, int64_t head_dim,
                      int64_t max_position, double default_theta, bool traditional);

// eos_token_id: an integer, a list of integers, or missing/null (empty result).
std::vector<int64_t> parse_eos(const nlohmann::json& cfg, const std::string& file);

// Names of a llama-style layer under `prefix` ("model.layers.3"): input_layernorm,
// post_attention_layernorm, self_attn.{q,k,v,o}_proj (+ q_norm/k_norm if `qk_norm`).
void set_llama_attention_names(LayerModules& n, const std::string& prefix, bool qk_norm);

// MoE names under `moe` ("model.layers.3.mlp"): router `moe.<router>`, stacked experts
// `moe.switch_mlp.{gate,up,down}_proj`, and the per-expert Hugging Face names
// `moe.experts.{e}.<g>/<u>/<d>` (g/u/d: "gate_proj","up_proj","down_proj" or "w1","w3","w2").
void set_switch_mlp_names(LayerModules& n, const std::string& moe, const std::string& router,
                          const char* g, const char* u, const char* d);

// Dense SwiGLU MLP names `mlp.{gate,up,down}_proj`.
void set_dense_mlp_names(LayerModules& n, const std::string& mlp);

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
