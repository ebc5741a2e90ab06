// DeepSeek's multi-head latent attention config and names (mla_common.h).
#include "model/arch/mla_common.h"

#include <cmath>

#include "core/error.h"
#include "io/json_config.h"
#include "model/arch/family_common.h"

namespace moex::model::arch {
namespace {

using nlohmann::json;

// mlx-lm's attention scale: q_head_dim^-0.5, times s^2 for a non-zero mscale_all_dim and a
// factor above 1 (whatever the rope type).
double softmax_scale(const json& j, const std::string& f, int64_t q_head_dim) {
  double scale = 1.0 / std::sqrt(double(q_head_dim));
  const json* rs = io::get_object_or_null(j, "rope_scaling", f);
  if (!rs) return scale;
  const std::string where = f + ": rope_scaling";
  const double all_dim = io::get_double_or(*rs, "mscale_all_dim", 0.0, where);
  if (all_dim == 0.0) return scale;
  const double factor = io::get_double(*rs, "factor", where);
  if (factor > 1.0) {
    const double s = 0.1 * all_dim * std::log(factor) + 1.0;
    scale *= s * s;
  }
  if (!std::isfinite(scale) || !(scale > 0.0))
    fail(where, ": mscale_all_dim = ", all_dim, " and factor = ", factor,
         " give a non-positive or non-finite softmax scale");
  return scale;
}

}  // namespace

void parse_mla_attention(const json& j, const std::string& f, ModelConfig& c) {
  DecoderDefaults dims;
  dims.head_dim = HeadDimRule::kHiddenOverHeads;  // unused by MLA; q_head_dim below
  dims.kv_heads_default_to_heads = true;
  parse_decoder_dims(j, f, dims, c);
  c.norm = NormKind::kRmsNorm;
  c.norm_eps = io::get_double_or(j, "rms_norm_eps", 1e-6, f);
  MlaParams& m = c.mla;
  if (j.contains("q_lora_rank") && j["q_lora_rank"].is_null())
    m.q_lora_rank = 0;
  else
    m.q_lora_rank = get_size_or(j, "q_lora_rank", 1536, limits::kMaxHidden, f);
  m.kv_lora_rank = get_size_or(j, "kv_lora_rank", 512, limits::kMaxHidden, f);
  m.nope_dim = get_size_or(j, "qk_nope_head_dim", 128, limits::kMaxHeadDim, f);
  m.rope_dim = get_size_or(j, "qk_rope_head_dim", 64, limits::kMaxHeadDim, f);
  m.v_head_dim = get_size_or(j, "v_head_dim", 128, limits::kMaxHeadDim, f);
  if (m.rope_dim % 2 != 0)
    fail(f, ": field 'qk_rope_head_dim' = ", m.rope_dim, " must be even (RoPE pairs)");
  c.head_dim = m.q_head_dim();
  c.attn_scale = softmax_scale(j, f, m.q_head_dim());
  const bool bias = io::get_bool_or(j, "attention_bias", false, f);
  c.q_bias = c.k_bias = c.o_bias = bias;  // q_a_proj, kv_a_proj_with_mqa, o_proj
  c.rope = parse_rope(j, f, m.rope_dim, c.max_position, 10000.0, true);
  c.rope.dims = m.rope_dim;
}

void set_mla_layer_names(LayerModules& n, const std::string& p, const MlaParams& m,
                         bool split_kv_b) {
  n.input_norm = p + ".input_layernorm";
  n.post_norm = p + ".post_attention_layernorm";
  const std::string a = p + ".self_attn";
  if (m.q_lora_rank > 0) {
    n.mla_q_a = a + ".q_a_proj";
    n.mla_q_a_norm = a + ".q_a_layernorm";
    n.mla_q_b = a + ".q_b_proj";
  } else {
    n.q = a + ".q_proj";
  }
  n.mla_kv_a = a + ".kv_a_proj_with_mqa";
  n.mla_kv_a_norm = a + ".kv_a_layernorm";
  if (split_kv_b) {
    n.mla_embed_q = a + ".embed_q";
    n.mla_unembed_out = a + ".unembed_out";
  }
  n.mla_kv_b = a + ".kv_b_proj";
  n.o = a + ".o_proj";
}

DeepseekMoeLayers::DeepseekMoeLayers(const json& j, const std::string& f, bool has_experts)
    : has_experts_(has_experts) {
  if (io::has_field(j, "first_k_dense_replace"))
    first_dense_ = get_size(j, "first_k_dense_replace", limits::kMaxLayers, f, 0);
  freq_ = get_size_or(j, "moe_layer_freq", 1, limits::kMaxLayers, f);
}

void add_deepseek_layers(ModelConfig& c, const json& j, const std::string& f, bool has_experts,
                         bool split_kv_b, bool expert_bias) {
  const DeepseekMoeLayers moe_layers(j, f, has_experts);
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const bool dense = !moe_layers.is_moe(i);
    LayerPlan l = llama_layer_plan(c, dense ? FfnKind::kDense : FfnKind::kMoe,
                                   dense ? c.dense_dff : c.moe.expert_dff);
    l.mixer = MixerKind::kMla;
    l.qk_norm = false;
    const std::string p = "model.layers." + std::to_string(i);
    LayerModules& n = l.names;
    set_mla_layer_names(n, p, c.mla, split_kv_b);
    if (dense) {
      set_dense_mlp_names(n, p + ".mlp");
    } else {
      set_switch_mlp_names(n, p + ".mlp", "gate", "gate_proj", "up_proj", "down_proj");
      if (expert_bias) n.expert_bias = p + ".mlp.gate.e_score_correction_bias";
      if (c.moe.shared_dff > 0) set_shared_mlp_names(n, p + ".mlp.shared_experts");
    }
    c.layers.push_back(std::move(l));
  }
}

}  // namespace moex::model::arch
