// gpt-oss (model_type gpt_oss; mlx-lm models/gpt_oss.py): attention with q/k/v/o biases and a
// learned sink logit per head, sliding-window (layer_types "sliding_attention") and full
// layers, YaRN RoPE; the MoE block's router Linear has a bias, takes the top-k logits
// (argpartition: ties to the higher index) and softmaxes them; experts with biases on every
// projection and the clamped SwiGLU (swiglu_oai). mlx-community ships the experts in mxfp4.
#include "core/error.h"
#include "io/json_config.h"
#include "model/arch/family_common.h"
#include "model/family_registry.h"

namespace moex::model {
namespace {

using nlohmann::json;

// The sliding window of a synthetic preset: gpt-oss's 128, or 8 in a tiny model so that a
// 45-position parity test crosses it.
int64_t preset_window(const ModelPreset& p) { return p.tiny ? 8 : 128; }

class GptOssFamily final : public Family {
 public:
  const char* name() const override { return "gpt_oss"; }
  std::vector<std::string> model_types() const override { return {"gpt_oss"}; }

  ModelConfig parse(const json& j, const std::string& f) const override {
    ModelConfig c = arch::begin_config(name(), j, f);
    // mlx-lm's ModelArgs defaults (the gpt-oss-120b shape) for absent fields.
    arch::DecoderDefaults dims;
    dims.hidden = 2880, dims.layers = 36, dims.vocab = 201088, dims.heads = 64;
    dims.kv_heads = 8, dims.max_position = 131072;
    dims.head_dim = arch::HeadDimRule::kField;
    if (!j.contains("head_dim")) fail(f, ": field 'head_dim' is required for gpt_oss");
    arch::parse_decoder_dims(j, f, dims, c);
    c.norm = NormKind::kRmsNorm;
    c.norm_eps = io::get_double_or(j, "rms_norm_eps", 1e-5, f);
    c.attn_scale = arch::default_attn_scale(c.head_dim);
    c.rope = arch::parse_rope(j, f, c.head_dim, c.max_position, 150000.0, false);
    // mlx-lm builds every attention Linear with a bias whatever attention_bias says.
    c.q_bias = c.k_bias = c.v_bias = c.o_bias = true;
    c.attention_sinks = true;
    c.moe.num_experts = arch::get_size_or(j, "num_local_experts", 128, limits::kMaxExperts, f);
    c.moe.top_k = arch::get_size_or(j, "num_experts_per_tok", 4, limits::kMaxExperts, f);
    c.moe.expert_dff = arch::get_size_or(j, "intermediate_size", 2880, limits::kMaxDff, f);
    // Top-k of the logits (ties to the higher index), softmax over the k selected.
    c.moe.router = moe::mixtral_router(c.moe.num_experts, c.moe.top_k);
    c.moe.router.ties = moe::TopKTies::kHigherIndexWins;
    c.moe.router_bias = true;
    c.moe.expert_linear_bias = true;
    c.moe.activation = ExpertActivation::kSwiGLUOai;
    c.tie_word_embeddings = false;  // mlx-lm's gpt_oss always has its own lm_head
    arch::set_llama_model_names(c, j, f);
    const int64_t window = arch::get_size_or(j, "sliding_window", 128, limits::kMaxPosition, f);
    const std::vector<bool> sliding = layer_types(j, f, c.num_layers);
    for (int64_t i = 0; i < c.num_layers; ++i) {
      LayerPlan l = arch::llama_layer_plan(c, FfnKind::kMoe, c.moe.expert_dff);
      l.sliding_window = sliding[size_t(i)] ? window : 0;
      const std::string p = "model.layers." + std::to_string(i);
      arch::set_llama_attention_names(l.names, p, false);
      l.names.sinks = p + ".self_attn.sinks";
      l.names.router = p + ".mlp.router";
      l.names.experts_gate = p + ".mlp.experts.gate_proj";
      l.names.experts_up = p + ".mlp.experts.up_proj";
      l.names.experts_down = p + ".mlp.experts.down_proj";
      // The original (Hugging Face) layout: mxfp4 gate_up_proj / down_proj blocks and scales.
      l.names.hf_experts_gate_up = p + ".mlp.experts.gate_up_proj";
      l.names.hf_experts_down = p + ".mlp.experts.down_proj";
      l.names.hf_fused = HfFusedExperts::kInterleavedMxfp4;
      c.layers.push_back(std::move(l));
    }
    validate_model_config(c);
    return c;
  }

  json preset_config(const ModelPreset& p) const override {
    json j = arch::base_preset_config(p, "GptOssForCausalLM");
    j["head_dim"] = p.head_dim;
    j["intermediate_size"] = p.moe_dff;
    j["num_local_experts"] = p.experts;
    j["num_experts_per_tok"] = p.top_k;
    j["rms_norm_eps"] = 1e-5;
    j["rope_theta"] = 150000.0;
    j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 32.0}, {"beta_fast", 32.0},
                         {"beta_slow", 1.0}, {"original_max_position_embeddings", 4096},
                         {"truncate", false}};
    j["sliding_window"] = preset_window(p);
    json types = json::array();
    for (int64_t i = 0; i < p.layers; ++i)
      types.push_back(i % 2 == 0 ? "sliding_attention" : "full_attention");
    j["layer_types"] = types;
    j["attention_bias"] = true;
    j["swiglu_limit"] = 7.0;
    j["hidden_act"] = "silu";
    j["tie_word_embeddings"] = false;
    return j;
  }

 private:
  // layer_types: one "sliding_attention" / "full_attention" per layer; absent: mlx-lm's
  // alternation starting with sliding, which covers only an even layer count (mlx-lm zips
  // the layers with a list of num_layers // 2 pairs and would skip the last of an odd count).
  static std::vector<bool> layer_types(const json& j, const std::string& f, int64_t layers) {
    std::vector<bool> sliding;
    if (!j.contains("layer_types") || j["layer_types"].is_null()) {
      if (layers % 2 != 0)
        fail(f, ": field 'layer_types' is missing and num_hidden_layers (", layers,
             ") is odd; mlx-lm's default alternation needs an even count");
      for (int64_t i = 0; i < layers; ++i) sliding.push_back(i % 2 == 0);
      return sliding;
    }
    const json& t = j["layer_types"];
    if (!t.is_array() || int64_t(t.size()) != layers)
      fail(f, ": field 'layer_types' must be a list of ", layers, " layer types (one per layer)");
    for (size_t i = 0; i < t.size(); ++i) {
      const std::string s = t[i].is_string() ? t[i].get<std::string>() : std::string();
      if (s != "sliding_attention" && s != "full_attention")
        fail(f, ": field 'layer_types'[", i, "] must be \"sliding_attention\" or "
             "\"full_attention\"");
      sliding.push_back(s == "sliding_attention");
    }
    return sliding;
  }

  // mlx-lm's quant_predicate: the router at 8 bits, group 64.
  std::optional<QuantOverride> reference_quant_override(const ModelConfig&,
                                                        std::string_view path) const override {
    if (path.ends_with("router")) return QuantOverride{};
    return std::nullopt;
  }
};

}  // namespace
}  // namespace moex::model

MOEX_DEFINE_FAMILY(gpt_oss, GptOssFamily)
