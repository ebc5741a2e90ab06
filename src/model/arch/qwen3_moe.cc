// Qwen3-MoE (model_type qwen3_moe; mlx-lm models/qwen3_moe.py): per-head q/k RMSNorm, plain
// RoPE, softmax over all experts then top-k (renormalized when norm_topk_prob), dense MLP on
// mlp_only_layers and off the decoder_sparse_step grid.
#include <algorithm>

#include "core/error.h"
#include "io/json_config.h"
#include "model/arch/family_common.h"
#include "model/family_registry.h"

namespace moex::model {
namespace {

using nlohmann::json;

class Qwen3MoeFamily final : public Family {
 public:
  const char* name() const override { return "qwen3_moe"; }
  std::vector<std::string> model_types() const override { return {"qwen3_moe"}; }

  ModelConfig parse(const json& j, const std::string& f) const override {
    ModelConfig c = arch::begin_config(name(), j, f);
    arch::DecoderDefaults dims;
    dims.max_position = 40960;
    arch::parse_decoder_dims(j, f, dims, c);
    c.norm = NormKind::kRmsNorm;
    c.norm_eps = io::get_double(j, "rms_norm_eps", f);
    c.qk_norm = QkNormKind::kPerHead;
    c.qk_norm_eps = c.norm_eps;
    c.attn_scale = arch::default_attn_scale(c.head_dim);
    // mlx-lm builds a plain nn.RoPE here (rope_scaling is read but not applied).
    c.rope = arch::parse_rope(j, f, c.head_dim, c.max_position, 10000.0, false);
    c.rope.kind = RopeKind::kDefault;
    c.dense_dff = arch::get_size(j, "intermediate_size", limits::kMaxDff, f);
    c.moe.num_experts = arch::get_size(j, "num_experts", limits::kMaxExperts, f, 0);
    c.moe.top_k = arch::get_size(j, "num_experts_per_tok", limits::kMaxExperts, f);
    c.moe.expert_dff = arch::get_size(j, "moe_intermediate_size", limits::kMaxDff, f);
    const bool renorm = io::get_bool(j, "norm_topk_prob", f);
    // mlx-lm qwen3_moe: softmax, argpartition(gates, kth=-k), norm_topk_prob.
    c.moe.router = moe::qwen3_moe_router(c.moe.num_experts, c.moe.top_k, renorm);
    const int64_t step = arch::get_size(j, "decoder_sparse_step", limits::kMaxLayers, f);
    const std::vector<int64_t> mlp_only =
        io::has_field(j, "mlp_only_layers") ? io::get_int_array(j, "mlp_only_layers", f)
                                            : std::vector<int64_t>{};
    c.tie_word_embeddings = io::get_bool_or(j, "tie_word_embeddings", false, f);
    arch::set_llama_model_names(c, j, f);
    for (int64_t i = 0; i < c.num_layers; ++i) {
      const bool dense = std::find(mlp_only.begin(), mlp_only.end(), i) != mlp_only.end() ||
                         c.moe.num_experts <= 0 || (i + 1) % step != 0;
      LayerPlan l = arch::llama_layer_plan(c, dense ? FfnKind::kDense : FfnKind::kMoe,
                                           dense ? c.dense_dff : c.moe.expert_dff);
      const std::string p = "model.layers." + std::to_string(i);
      arch::set_llama_attention_names(l.names, p, true);
      if (dense)
        arch::set_dense_mlp_names(l.names, p + ".mlp");
      else
        arch::set_switch_mlp_names(l.names, p + ".mlp", "gate", "gate_proj", "up_proj", "down_proj");
      c.layers.push_back(std::move(l));
    }
    validate_model_config(c);
    return c;
  }

  // mlx-lm's sanitize pops lm_head.weight when the embeddings are tied.
  bool reference_drops(const ModelConfig& c, std::string_view tensor) const override {
    return arch::drops_tied_lm_head(c, tensor);
  }

  json preset_config(const ModelPreset& p) const override {
    json j = arch::base_preset_config(p, "Qwen3MoeForCausalLM");
    j["head_dim"] = p.head_dim;
    j["intermediate_size"] = p.dense_dff > 0 ? p.dense_dff : 3 * p.hidden;
    j["moe_intermediate_size"] = p.moe_dff;
    j["num_experts"] = p.experts;
    j["num_experts_per_tok"] = p.top_k;
    j["norm_topk_prob"] = true;
    j["decoder_sparse_step"] = 1;
    json only = json::array();
    for (int64_t i = 0; i < p.dense_layers; ++i) only.push_back(i);
    j["mlp_only_layers"] = only;
    j["rms_norm_eps"] = 1e-6;
    j["rope_theta"] = 1000000.0;
    j["rope_scaling"] = nullptr;
    j["tie_word_embeddings"] = p.tie_embeddings;
    j["attention_bias"] = false;
    j["hidden_act"] = "silu";
    return j;
  }

  // mlx-lm's quant_predicate: the router at 8 bits, group 64.
  std::optional<QuantOverride> reference_quant_override(const ModelConfig&,
                                                        std::string_view path) const override {
    if (path.ends_with("mlp.gate")) return QuantOverride{};
    return std::nullopt;
  }
};

}  // namespace
}  // namespace moex::model

MOEX_DEFINE_FAMILY(qwen3_moe, Qwen3MoeFamily)
