// LFM2-MoE (model_type lfm2_moe; mlx-lm models/lfm2_moe.py): a hybrid of attention layers
// (per-head q/k RMSNorm "q_layernorm"/"k_layernorm", out_proj) and gated short-convolution
// layers; the first num_dense_layers FFNs are dense, the rest MoE with sigmoid routing,
// expert_bias (f32) for selection only, optional renormalization and routed_scaling_factor.
// Embeddings are always tied; the final norm is model.embedding_norm.
#include <algorithm>
#include <utility>

#include "core/error.h"
#include "io/json_config.h"
#include "model/arch/family_common.h"
#include "model/family_registry.h"

namespace moex::model {
namespace {

using nlohmann::json;

class Lfm2MoeFamily final : public Family {
 public:
  const char* name() const override { return "lfm2_moe"; }
  std::vector<std::string> model_types() const override { return {"lfm2_moe"}; }

  ModelConfig parse(const json& j, const std::string& f) const override {
    ModelConfig c = arch::begin_config(name(), j, f);
    arch::DecoderDefaults dims;
    dims.head_dim = arch::HeadDimRule::kHiddenOverHeads;
    arch::parse_decoder_dims(j, f, dims, c);
    c.norm = NormKind::kRmsNorm;
    c.norm_eps = io::get_double(j, "norm_eps", f);
    c.qk_norm = QkNormKind::kPerHead;
    c.qk_norm_eps = c.norm_eps;
    c.attn_scale = arch::default_attn_scale(c.head_dim);
    c.rope = arch::parse_rope(j, f, c.head_dim, c.max_position, 1e6, false);
    c.rope.kind = RopeKind::kDefault;  // mlx-lm: plain nn.RoPE
    c.conv_kernel = arch::get_size(j, "conv_L_cache", limits::kMaxConvKernel, f);
    c.conv_bias = io::get_bool(j, "conv_bias", f);
    c.dense_dff = arch::get_size(j, "intermediate_size", limits::kMaxDff, f);
    c.moe.num_experts = arch::get_size(j, "num_experts", limits::kMaxExperts, f);
    c.moe.top_k = arch::get_size(j, "num_experts_per_tok", limits::kMaxExperts, f);
    c.moe.expert_dff = arch::get_size(j, "moe_intermediate_size", limits::kMaxDff, f);
    // mlx-lm lfm2_moe: sigmoid + expert_bias for the selection, argpartition(scores, kth=-k);
    // the bias itself is a tensor, bound with the weights.
    c.moe.router = moe::lfm2_moe_router(
        c.moe.num_experts, c.moe.top_k, io::get_bool(j, "norm_topk_prob", f),
        float(io::get_double_or(j, "routed_scaling_factor", 1.0, f)), {});
    c.moe.use_expert_bias = io::get_bool(j, "use_expert_bias", f);
    const int64_t dense_layers = arch::get_size(j, "num_dense_layers", limits::kMaxLayers, f, 0);
    std::vector<int64_t> attn;
    if (io::has_field(j, "full_attn_idxs")) {
      attn = io::get_int_array(j, "full_attn_idxs", f);
    } else {
      if (!io::has_field(j, "layer_types"))
        fail(f, ": needs 'full_attn_idxs' or 'layer_types' to place the attention layers");
      const std::vector<std::string> types = io::get_string_array(j, "layer_types", f);
      if (int64_t(types.size()) != c.num_layers)
        fail(f, ": field 'layer_types' has ", types.size(), " entries for ", c.num_layers, " layers");
      for (size_t i = 0; i < types.size(); ++i)
        if (types[i] == "full_attention") attn.push_back(int64_t(i));
    }
    if (attn.empty()) fail(f, ": no attention layer (full_attn_idxs / layer_types)");
    c.tie_word_embeddings = true;
    c.embed_name = "model.embed_tokens";
    c.final_norm_name = "model.embedding_norm";
    c.eos_token_ids = arch::parse_eos(j, f);
    c.bos_token_id = io::get_int_or(j, "bos_token_id", -1, f);
    for (int64_t i = 0; i < c.num_layers; ++i) {
      const bool is_attn = std::find(attn.begin(), attn.end(), i) != attn.end();
      const bool dense = i < dense_layers;
      LayerPlan l = arch::llama_layer_plan(c, dense ? FfnKind::kDense : FfnKind::kMoe,
                                           dense ? c.dense_dff : c.moe.expert_dff);
      const std::string p = "model.layers." + std::to_string(i);
      LayerModules& n = l.names;
      n.input_norm = p + ".operator_norm";
      n.post_norm = p + ".ffn_norm";
      if (is_attn) {
        n.q = p + ".self_attn.q_proj";
        n.k = p + ".self_attn.k_proj";
        n.v = p + ".self_attn.v_proj";
        n.o = p + ".self_attn.out_proj";
        n.q_norm = p + ".self_attn.q_layernorm";
        n.k_norm = p + ".self_attn.k_layernorm";
      } else {
        l.mixer = MixerKind::kShortConv;
        l.use_rope = false;
        l.qk_norm = false;
        n.conv_in = p + ".conv.in_proj";
        n.conv = p + ".conv.conv";
        n.conv_out = p + ".conv.out_proj";
      }
      if (dense) {
        arch::set_dense_mlp_names(n, p + ".feed_forward");
      } else {
        arch::set_switch_mlp_names(n, p + ".feed_forward", "gate", "w1", "w3", "w2");
        if (c.moe.use_expert_bias) n.expert_bias = p + ".feed_forward.expert_bias";
      }
      c.layers.push_back(std::move(l));
    }
    validate_model_config(c);
    return c;
  }

  // transformers' Lfm2MoeMLP names a dense layer's projections w1 (gate), w3 (up) and w2
  // (down); mlx-lm's sanitize renames every "w1.weight" to "gate_proj.weight" and so on. The
  // experts' w1/w3/w2 are read through the per-expert names instead (hf_expert_*).
  std::string reference_rename(const ModelConfig& c, std::string_view t) const override {
    for (const LayerPlan& l : c.layers) {
      if (l.ffn != FfnKind::kDense) continue;
      const std::string ff = l.names.dense_gate.substr(0, l.names.dense_gate.rfind('.') + 1);
      for (const auto& [hf, mlx] :
           {std::pair{"w1", "gate_proj"}, std::pair{"w3", "up_proj"}, std::pair{"w2", "down_proj"}})
        if (t == ff + hf + ".weight") return ff + mlx + ".weight";
    }
    return {};
  }

  json preset_config(const ModelPreset& p) const override {
    json j = arch::base_preset_config(p, "Lfm2MoeForCausalLM");
    j["intermediate_size"] = p.dense_dff;
    j["moe_intermediate_size"] = p.moe_dff;
    j["num_experts"] = p.experts;
    j["num_experts_per_tok"] = p.top_k;
    j["norm_topk_prob"] = true;
    j["use_expert_bias"] = true;
    j["routed_scaling_factor"] = 1.0;
    j["num_dense_layers"] = p.dense_layers;
    j["norm_eps"] = 1e-5;
    j["conv_bias"] = false;
    j["conv_L_cache"] = 3;
    j["rope_theta"] = 1000000.0;
    json types = json::array();
    for (int64_t i = 0; i < p.layers; ++i) {
      const bool a = p.attention_layers.empty() ||
                     std::find(p.attention_layers.begin(), p.attention_layers.end(), i) !=
                         p.attention_layers.end();
      types.push_back(a ? "full_attention" : "conv");
    }
    // A truncated preset (--layers) keeps at least one attention layer, as mlx-lm needs.
    if (std::find(types.begin(), types.end(), "full_attention") == types.end() && p.layers > 0)
      types[size_t(p.layers - 1)] = "full_attention";
    j["layer_types"] = types;
    j["tie_word_embeddings"] = true;
    return j;
  }

  // mlx-lm's quant_predicate: the router at 8 bits, group 64.
  std::optional<QuantOverride> reference_quant_override(const ModelConfig&,
                                                        std::string_view path) const override {
    if (path.ends_with("feed_forward.gate")) return QuantOverride{};
    return std::nullopt;
  }

  // mlx-lm's cast_predicate: expert_bias keeps its stored dtype.
  bool reference_keeps_dtype(const ModelConfig&, std::string_view tensor) const override {
    return tensor.find("expert_bias") != std::string_view::npos;
  }
};

}  // namespace
}  // namespace moex::model

MOEX_DEFINE_FAMILY(lfm2_moe, Lfm2MoeFamily)
