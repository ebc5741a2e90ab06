// Gemma-4 text, MoE variant (model_type gemma4_text, Gemma-4 26B-A4B; mlx-lm
// models/gemma4_text.py): sliding-window layers (head_dim, num_key_value_heads, default RoPE)
// and full layers (global_head_dim, num_global_key_value_heads, values = raw k_proj output
// with attention_k_eq_v, proportional RoPE); per-head q/k RMSNorm before RoPE, weightless
// value norm, attention scale 1; sandwich norms; a dense GeGLU MLP beside GeGLU experts whose
// router reads the raw residual (RMSNorm with router.scale * hidden^-0.5, top-k of the logits,
// softmax over the k, * per_expert_scale); a layer scalar on the residual; embedding * sqrt(H),
// tied head, tanh soft-capped logits. Refused: per-layer inputs (E2B/E4B), KV sharing, the
// dense-only variant, RoPE types other than default / proportional. The multimodal wrapper
// (model_type gemma4, mlx-lm models/gemma4.py) is read too: its text_config with the top-level
// vocab_size, tensors under language_model.model.*, the vision and audio towers dropped.
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "io/json_config.h"
#include "model/arch/family_common.h"
#include "model/family_registry.h"

namespace moex::model {
namespace {

using nlohmann::json;

// A field mlx-lm defaults to a value moex refuses (the E2B model's); absent or non-zero is an
// error naming the field, so that a 26B config missing it is not silently misread.
void require_zero(const json& j, const char* field, int64_t mlx_default, int64_t hi,
                  const char* what, const std::string& f) {
  const int64_t v = io::has_field(j, field) ? io::get_int_in(j, field, 0, hi, f) : mlx_default;
  if (v != 0)
    fail(f, ": field '", field, "' is ", v,
         io::has_field(j, field) ? "" : " (mlx-lm's default when the field is absent)", ": ",
         what, " is not supported; the MoE model (26B-A4B) writes 0");
}

// One layer type's RoPE, as mlx-lm's initialize_rope reads rope_parameters[type].
RopeParams layer_rope(const json* rp, const char* type, int64_t head_dim, bool traditional,
                      const std::string& f) {
  const std::string where = f + ": rope_parameters." + type;
  const json* p = rp ? io::get_object_or_null(*rp, type, f + ": rope_parameters") : nullptr;
  const json empty = json::object();
  const json& o = p ? *p : empty;
  RopeParams r;
  r.theta = io::get_double_or(o, "rope_theta", 10000.0, where);
  if (!(r.theta > 0)) fail(where, ": rope_theta must be positive, got ", r.theta);
  r.traditional = traditional;
  r.dims = head_dim;
  std::string kind = io::get_string_or(o, "type", "", where);
  if (kind.empty()) kind = io::get_string_or(o, "rope_type", "default", where);
  if (kind == "default") return r;
  if (kind != "proportional")
    fail(where, ": rope_type '", kind, "' is not supported for gemma4_text (default or "
         "proportional)");
  const double partial = io::get_double_or(o, "partial_rotary_factor", 1.0, where);
  if (!(partial >= 0.0 && partial <= 1.0))
    fail(where, ": partial_rotary_factor must be in [0, 1], got ", partial);
  r.kind = RopeKind::kProportional;
  r.rotated_dims = int64_t(double(head_dim) * partial);  // Python's int(dims * factor)
  r.rotated_dims += r.rotated_dims % 2;  // arange(0, rotated, 2): ceil(rotated / 2) pairs
  r.factor = io::get_double_or(o, "factor", 1.0, where);
  if (!(r.factor > 0)) fail(where, ": factor must be positive, got ", r.factor);
  return r;
}

// layer_types, or mlx-lm's default ([sliding] * (pattern - 1) + [full]) repeated.
std::vector<bool> sliding_layers(const json& j, int64_t layers, const std::string& f) {
  std::vector<bool> sliding;
  if (!io::has_field(j, "layer_types")) {
    const int64_t pattern = arch::get_size_or(j, "sliding_window_pattern", 5, limits::kMaxLayers, f);
    for (int64_t i = 0; i < layers; ++i) sliding.push_back(i % pattern != pattern - 1);
    return sliding;
  }
  if (io::has_field(j, "sliding_window_pattern"))
    arch::get_size(j, "sliding_window_pattern", limits::kMaxLayers, f);  // range checked only
  const std::vector<std::string> t = io::get_string_array(j, "layer_types", f);
  if (int64_t(t.size()) != layers)
    fail(f, ": field 'layer_types' lists ", t.size(), " layers; expected ", layers);
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] != "sliding_attention" && t[i] != "full_attention")
      fail(f, ": field 'layer_types'[", i, "] is '", t[i],
           "'; expected \"sliding_attention\" or \"full_attention\"");
    sliding.push_back(t[i] == "sliding_attention");
  }
  return sliding;
}

void set_layer_names(LayerModules& n, const std::string& p, bool has_v) {
  n.input_norm = p + ".input_layernorm";
  n.attn_out_norm = p + ".post_attention_layernorm";
  n.post_norm = p + ".pre_feedforward_layernorm";
  n.ffn_out_norm = p + ".post_feedforward_layernorm";
  n.q = p + ".self_attn.q_proj";
  n.k = p + ".self_attn.k_proj";
  if (has_v) n.v = p + ".self_attn.v_proj";
  n.o = p + ".self_attn.o_proj";
  n.q_norm = p + ".self_attn.q_norm";
  n.k_norm = p + ".self_attn.k_norm";
  n.dense_gate = p + ".mlp.gate_proj";
  n.dense_up = p + ".mlp.up_proj";
  n.dense_down = p + ".mlp.down_proj";
  n.dense_out_norm = p + ".post_feedforward_layernorm_1";
  n.experts_in_norm = p + ".pre_feedforward_layernorm_2";
  n.experts_out_norm = p + ".post_feedforward_layernorm_2";
  n.router = p + ".router.proj";
  n.router_input_scale = p + ".router.scale";
  n.router_expert_scale = p + ".router.per_expert_scale";
  n.experts_gate = p + ".experts.switch_glu.gate_proj";
  n.experts_up = p + ".experts.switch_glu.up_proj";
  n.experts_down = p + ".experts.switch_glu.down_proj";
  // The Hugging Face layout: experts.gate_up_proj [E, 2*Dff, H] (gate rows, then up) and
  // experts.down_proj [E, H, Dff], plain tensors (mlx-lm's sanitize splits / renames them).
  n.hf_experts_gate_up = p + ".experts.gate_up_proj";
  n.hf_experts_down = p + ".experts.down_proj";
  n.hf_fused = HfFusedExperts::kOutputsFirst;
  n.layer_scalar = p + ".layer_scalar";
}

// The model_types mlx-lm reads through its multimodal gemma4 module.
bool is_wrapper(std::string_view model_type) {
  return model_type == "gemma4" || model_type == "gemma4_unified";
}

class Gemma4TextFamily final : public Family {
 public:
  const char* name() const override { return "gemma4_text"; }
  // gemma4_unified (the encoder-free multimodal variant) is the wrapper to mlx-lm, which maps
  // it to its gemma4 module (MODEL_REMAPPING); its vision weights are dropped like the towers.
  std::vector<std::string> model_types() const override {
    return {"gemma4_text", "gemma4", "gemma4_unified"};
  }

  ModelConfig parse(const json& top, const std::string& file) const override {
    // The wrapper: mlx-lm's gemma4.ModelArgs overwrites text_config.vocab_size with its own
    // vocab_size (default 262144) and prefixes every text tensor with language_model.
    const bool wrapped = is_wrapper(io::get_string(top, "model_type", file));
    json wrapped_text;
    if (wrapped) {
      wrapped_text = io::get_object(top, "text_config", file);
      wrapped_text["vocab_size"] =
          arch::get_size_or(top, "vocab_size", 262144, limits::kMaxVocab, file);
    }
    const json& j = wrapped ? wrapped_text : top;
    const std::string f = wrapped ? file + ": text_config" : file;
    const std::string prefix = wrapped ? "language_model." : "";
    ModelConfig c = arch::begin_config(name(), top, file);
    // mlx-lm's ModelArgs defaults (the E2B shape) for absent fields.
    arch::DecoderDefaults dims;
    dims.hidden = 1536, dims.layers = 35, dims.vocab = 262144, dims.heads = 8, dims.kv_heads = 1;
    dims.max_position = 131072;
    dims.head_dim = arch::HeadDimRule::kField;
    if (!io::has_field(j, "head_dim")) fail(f, ": field 'head_dim' is required for gemma4_text");
    arch::parse_decoder_dims(j, f, dims, c);
    require_zero(j, "hidden_size_per_layer_input", 256, limits::kMaxHidden,
                 "per-layer inputs (Gemma-4 E2B/E4B)", f);
    require_zero(j, "num_kv_shared_layers", 20, c.num_layers, "KV sharing across layers", f);
    if (!io::get_bool_or(j, "enable_moe_block", false, f))
      fail(f, ": field 'enable_moe_block' is false or absent: the dense Gemma-4 variant is not "
              "supported (moex runs the MoE model, 26B-A4B)");
    // Doubles the MLP only on KV-shared layers, which are refused above.
    io::get_bool_or(j, "use_double_wide_mlp", true, f);
    const int64_t global_hd = io::has_field(j, "global_head_dim")
                                  ? io::get_int_in(j, "global_head_dim", 0, limits::kMaxHeadDim, f)
                                  : 512;
    const int64_t full_hd = global_hd > 0 ? global_hd : c.head_dim;
    const bool k_eq_v = io::get_bool_or(j, "attention_k_eq_v", false, f);
    const int64_t global_kv = io::has_field(j, "num_global_key_value_heads")
                                  ? arch::get_size(j, "num_global_key_value_heads", c.heads, f)
                                  : c.kv_heads;
    const int64_t full_kv = k_eq_v ? global_kv : c.kv_heads;
    c.norm = NormKind::kRmsNorm;
    c.norm_eps = io::get_double_or(j, "rms_norm_eps", 1e-6, f);
    c.qk_norm = QkNormKind::kPerHead;
    c.qk_norm_eps = c.norm_eps;
    c.attn_scale = 1.0;  // the q/k norm weights carry the scale
    const bool traditional = io::get_bool_or(j, "rope_traditional", false, f);
    const json* rp = io::get_object_or_null(j, "rope_parameters", f);
    json defaults;
    if (!rp) {  // mlx-lm's __post_init__
      defaults = {{"full_attention", {{"partial_rotary_factor", 0.25}, {"rope_theta", 1e6},
                                      {"rope_type", "proportional"}}},
                  {"sliding_attention", {{"partial_rotary_factor", 1.0}, {"rope_theta", 1e4},
                                         {"rope_type", "default"}}}};
      rp = &defaults;
    }
    c.rope = layer_rope(rp, "sliding_attention", c.head_dim, traditional, f);
    const RopeParams full_rope = layer_rope(rp, "full_attention", full_hd, traditional, f);
    const int64_t window = arch::get_size_or(j, "sliding_window", 512, limits::kMaxPosition, f);
    const int64_t dense_dff = arch::get_size_or(j, "intermediate_size", 6144, limits::kMaxDff, f);
    c.moe.num_experts = arch::get_size(j, "num_experts", limits::kMaxExperts, f);
    c.moe.top_k = arch::get_size(j, "top_k_experts", c.moe.num_experts, f);
    c.moe.expert_dff = arch::get_size(j, "moe_intermediate_size", limits::kMaxDff, f);
    // The per-expert scale is a tensor, bound with the weights (router_expert_scale).
    c.moe.router = moe::topk_softmax_expert_scale_router(c.moe.num_experts, c.moe.top_k, {});
    c.moe.router_expert_scale = true;
    c.moe.activation = ExpertActivation::kGeGLU;
    c.dense_activation = ExpertActivation::kGeGLU;
    c.embedding_scale = std::sqrt(double(c.hidden));
    c.final_logit_softcap =
        io::has_field(j, "final_logit_softcapping")
            ? io::get_double(j, "final_logit_softcapping", f)
            : (j.contains("final_logit_softcapping") ? 0.0 : 30.0);  // null: no cap
    if (c.final_logit_softcap < 0)
      fail(f, ": field 'final_logit_softcapping' must be positive, got ", c.final_logit_softcap);
    c.tie_word_embeddings = io::get_bool_or(j, "tie_word_embeddings", true, f);
    arch::set_llama_model_names(c, wrapped ? top : j, file);
    c.embed_name = prefix + c.embed_name;
    c.final_norm_name = prefix + c.final_norm_name;
    if (!c.lm_head_name.empty()) c.lm_head_name = prefix + c.lm_head_name;
    const std::vector<bool> sliding = sliding_layers(j, c.num_layers, f);
    for (int64_t i = 0; i < c.num_layers; ++i) {
      LayerPlan l = arch::llama_layer_plan(c, FfnKind::kMoe, c.moe.expert_dff);
      l.parallel_dense_dff = dense_dff;
      l.value_norm = true;
      if (sliding[size_t(i)]) {
        l.sliding_window = window;
      } else {
        l.head_dim = full_hd;
        l.kv_heads = full_kv;
        l.values_from_keys = k_eq_v;
        l.rope = full_rope;
      }
      set_layer_names(l.names, prefix + "model.layers." + std::to_string(i), !l.values_from_keys);
      c.layers.push_back(std::move(l));
    }
    validate_model_config(c);
    return c;
  }

  // The wrapper's sanitize drops the vision and audio towers (stored with or without "model.").
  bool reference_drops(const ModelConfig& c, std::string_view tensor) const override {
    if (!is_wrapper(c.model_type)) return false;
    if (tensor.substr(0, 6) == "model.") tensor.remove_prefix(6);
    for (std::string_view tower : {"vision_tower", "multi_modal_projector", "audio_tower",
                                   "embed_audio", "embed_vision", "vision_embedder"})
      if (tensor.substr(0, tower.size()) == tower) return true;
    return false;
  }

  json preset_config(const ModelPreset& p) const override {
    json j = text_preset_config(p);
    if (p.model_type != "gemma4") return j;
    // The multimodal wrapper as mlx-community converts it (the towers are not written).
    json top = {{"architectures", json::array({"Gemma4ForConditionalGeneration"})},
                {"model_type", "gemma4"}, {"vocab_size", p.vocab},
                {"torch_dtype", j["torch_dtype"]}, {"eos_token_id", j["eos_token_id"]},
                {"bos_token_id", j["bos_token_id"]}, {"tie_word_embeddings", true}};
    j["model_type"] = "gemma4_text";
    for (const char* moved :
         {"architectures", "eos_token_id", "bos_token_id", "torch_dtype", "vocab_size"})
      j.erase(moved);
    top["text_config"] = j;
    return top;
  }

 private:
  static json text_preset_config(const ModelPreset& p) {
    json j = arch::base_preset_config(p, "Gemma4ForCausalLM");
    // Full layers: twice the sliding head_dim and a quarter of the kv heads (26B-A4B: 512 and
    // 2 against 256 and 8; the tiny preset: 128 and 1 against 64 and 2).
    j["head_dim"] = p.head_dim;
    j["global_head_dim"] = 2 * p.head_dim;
    j["num_global_key_value_heads"] = std::max<int64_t>(1, p.kv_heads / 4);
    j["attention_k_eq_v"] = true;
    j["intermediate_size"] = p.dense_dff;
    j["enable_moe_block"] = true;
    j["num_experts"] = p.experts;
    j["top_k_experts"] = p.top_k;
    j["moe_intermediate_size"] = p.moe_dff;
    // mlx-lm's defaults are the E2B model's (256, 20, true): written out explicitly.
    j["hidden_size_per_layer_input"] = 0;
    j["num_kv_shared_layers"] = 0;
    j["use_double_wide_mlp"] = false;
    j["rms_norm_eps"] = 1e-6;
    j["sliding_window"] = p.tiny ? 8 : 1024;  // tiny: a 45-position parity run crosses it
    // 26B-A4B: ([sliding] * 5 + [full]) * 5; tiny: (s, f) * 2. The last layer is a full one,
    // as Hugging Face's Gemma4TextConfig requires.
    json types = json::array();
    const int64_t period = p.tiny ? 2 : 6;
    for (int64_t i = 0; i < p.layers; ++i)
      types.push_back(i % period == period - 1 ? "full_attention" : "sliding_attention");
    j["layer_types"] = types;
    j["rope_parameters"] = {
        {"full_attention", {{"partial_rotary_factor", 0.25}, {"rope_theta", 1e6},
                            {"rope_type", "proportional"}}},
        {"sliding_attention", {{"rope_theta", 1e4}, {"rope_type", "default"}}}};
    j["final_logit_softcapping"] = 30.0;
    j["tie_word_embeddings"] = true;
    j["hidden_activation"] = "gelu_pytorch_tanh";
    return j;
  }

  // mlx-lm's quant_predicate: the router at 8 bits, group 64.
  std::optional<QuantOverride> reference_quant_override(const ModelConfig&,
                                                        std::string_view path) const override {
    if (path.ends_with("router.proj")) return QuantOverride{};
    return std::nullopt;
  }
};

}  // namespace
}  // namespace moex::model

MOEX_DEFINE_FAMILY(gemma4_text, Gemma4TextFamily)
