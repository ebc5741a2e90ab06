// Llama-4 text (model_type llama4 with a text_config; mlx-lm models/llama4.py): every 4th
// layer is a global NoPE layer (attention-temperature tuning), the others use llama3 RoPE
// (traditional pairs), chunked attention and weightless q/k RMSNorm after RoPE. MoE layers
// route top-1 on raw logits; the expert input is x * sigmoid(logit); a shared expert is added.
#include <algorithm>

#include "core/error.h"
#include "io/json_config.h"
#include "model/arch/family_common.h"
#include "model/family_registry.h"

namespace moex::model {
namespace {

using nlohmann::json;

// attn_temperature_tuning is an integer in mlx-lm and a boolean in Hugging Face configs.
bool get_int_or_bool(const json& j, const char* field, bool def, const std::string& f) {
  if (!io::has_field(j, field)) return def;
  if (j.at(field).is_boolean()) return io::get_bool(j, field, f);
  return io::get_int(j, field, f) != 0;
}

class Llama4Family final : public Family {
 public:
  const char* name() const override { return "llama4"; }
  std::vector<std::string> model_types() const override { return {"llama4"}; }

  ModelConfig parse(const json& top, const std::string& file) const override {
    const json& j = io::get_object(top, "text_config", file);
    const std::string f = file + ": text_config";
    ModelConfig c = arch::begin_config(name(), top, file);
    arch::DecoderDefaults dims;
    dims.head_dim = arch::HeadDimRule::kField;
    arch::parse_decoder_dims(j, f, dims, c);
    const bool attn_bias = io::get_bool(j, "attention_bias", f);
    c.q_bias = c.k_bias = c.v_bias = c.o_bias = attn_bias;
    c.norm = NormKind::kRmsNorm;
    c.norm_eps = io::get_double(j, "rms_norm_eps", f);
    const bool qk_norm = io::get_bool(j, "use_qk_norm", f);
    c.qk_norm = qk_norm ? QkNormKind::kPerHeadNoWeight : QkNormKind::kNone;
    c.qk_norm_eps = 1e-6;  // hard-coded in mlx-lm
    c.attn_scale = arch::default_attn_scale(c.head_dim);
    if (!j.contains("rope_scaling")) fail(f, ": missing field 'rope_scaling' (may be null)");
    c.rope = arch::parse_rope(j, f, c.head_dim, c.max_position, 500000.0, true);
    c.attention_chunk_size = arch::get_size(j, "attention_chunk_size", limits::kMaxPosition, f);
    const bool temperature = get_int_or_bool(j, "attn_temperature_tuning", true, f);
    c.attn_temperature_floor_scale = io::get_double_or(j, "floor_scale", 8192.0, f);
    if (!(c.attn_temperature_floor_scale > 0.0))
      fail(f, ": field 'floor_scale' must be positive, got ", c.attn_temperature_floor_scale);
    c.attn_temperature_scale = io::get_double_or(j, "attn_scale", 0.1, f);
    c.dense_dff = arch::get_size(j, "intermediate_size_mlp", limits::kMaxDff, f);
    c.moe.num_experts = arch::get_size(j, "num_local_experts", limits::kMaxExperts, f);
    c.moe.top_k = arch::get_size(j, "num_experts_per_tok", limits::kMaxExperts, f);
    if (c.moe.top_k != 1) fail(f, ": field 'num_experts_per_tok' must be 1 for llama4, got ", c.moe.top_k);
    c.moe.expert_dff = arch::get_size(j, "intermediate_size", limits::kMaxDff, f);
    c.moe.router = moe::llama4_router(c.moe.num_experts, c.moe.top_k);
    c.moe.shared_dff = c.moe.expert_dff;
    c.moe.shared_expert_input_scaled = true;
    const int64_t step = arch::get_size(j, "interleave_moe_layer_step", limits::kMaxLayers, f);
    c.tie_word_embeddings = false;
    c.embed_name = "language_model.model.embed_tokens";
    c.final_norm_name = "language_model.model.norm";
    c.lm_head_name = "language_model.lm_head";
    c.eos_token_ids = arch::parse_eos(j, f);
    if (c.eos_token_ids.empty()) c.eos_token_ids = arch::parse_eos(top, file);
    c.bos_token_id = io::get_int_or(j, "bos_token_id", io::get_int_or(top, "bos_token_id", -1, file), f);
    for (int64_t i = 0; i < c.num_layers; ++i) {
      const bool moe = i % step == step - 1;
      const bool rope = (i + 1) % 4 != 0;  // mlx-lm: every 4th layer is NoPE and global
      LayerPlan l = arch::llama_layer_plan(c, moe ? FfnKind::kMoe : FfnKind::kDense,
                                           moe ? c.moe.expert_dff : c.dense_dff);
      l.use_rope = rope;
      l.chunked_attention = rope;
      l.qk_norm = qk_norm && rope;
      l.attn_temperature = temperature && !rope;
      const std::string p = "language_model.model.layers." + std::to_string(i);
      arch::set_llama_attention_names(l.names, p, false);
      const std::string ff = p + ".feed_forward";
      if (moe) {
        l.names.router = ff + ".router";
        l.names.experts_gate = ff + ".experts.gate_proj";
        l.names.experts_up = ff + ".experts.up_proj";
        l.names.experts_down = ff + ".experts.down_proj";
        arch::set_shared_mlp_names(l.names, ff + ".shared_expert");
        l.names.hf_experts_gate_up = ff + ".experts.gate_up_proj";
        l.names.hf_experts_down = ff + ".experts.down_proj";
        l.names.hf_fused = HfFusedExperts::kInputsFirst;
      } else {
        arch::set_dense_mlp_names(l.names, ff);
      }
      c.layers.push_back(std::move(l));
    }
    validate_model_config(c);
    return c;
  }

  // mlx-lm's sanitize removes the vision tower and its projector (text-only model).
  bool reference_drops(const ModelConfig&, std::string_view tensor) const override {
    return tensor.find("vision_model") != std::string_view::npos ||
           tensor.find("multi_modal_projector") != std::string_view::npos;
  }

  json preset_config(const ModelPreset& p) const override {
    json t = arch::base_preset_config(p, "Llama4ForCausalLM");
    t.erase("architectures");
    t["model_type"] = "llama4_text";
    t["head_dim"] = p.head_dim;
    t["intermediate_size"] = p.moe_dff;
    t["intermediate_size_mlp"] = p.dense_dff > 0 ? p.dense_dff : 2 * p.moe_dff;
    t["num_local_experts"] = p.experts;
    t["num_experts_per_tok"] = p.top_k;
    t["interleave_moe_layer_step"] = 1;
    t["attention_bias"] = false;
    t["attention_chunk_size"] = std::min<int64_t>(8192, p.max_position);
    t["use_qk_norm"] = true;
    t["attn_temperature_tuning"] = true;  // HF validates a bool (mlx-lm types it int)
    t["floor_scale"] = 8192;
    t["attn_scale"] = 0.1;
    t["rms_norm_eps"] = 1e-5;
    t["rope_theta"] = 500000.0;
    t["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", 16.0},
                         {"low_freq_factor", 1.0},
                         {"high_freq_factor", 1.0},
                         {"original_max_position_embeddings", 8192}};
    t["tie_word_embeddings"] = false;
    t["hidden_act"] = "silu";
    json j;
    j["architectures"] = json::array({"Llama4ForConditionalGeneration"});
    j["model_type"] = "llama4";
    j["text_config"] = t;
    j["tie_word_embeddings"] = false;
    j["eos_token_id"] = synthetic_eos_id(p.vocab);
    return j;
  }
};

}  // namespace
}  // namespace moex::model

MOEX_DEFINE_FAMILY(llama4, Llama4Family)
