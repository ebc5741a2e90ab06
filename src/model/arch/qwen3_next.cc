// Qwen3-Next (model_type qwen3_next; mlx-lm models/qwen3_next.py): every
// full_attention_interval-th layer is gated attention (q_proj gives query and gate per head,
// per-head q/k RMSNorm, partial RoPE, output * sigmoid(gate)), the others Gated DeltaNet
// linear attention; MoE with softmax top-k routing and a sigmoid-gated shared expert, dense
// MLP on mlp_only_layers and off the decoder_sparse_step grid.
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "io/json_config.h"
#include "model/arch/family_common.h"
#include "model/family_registry.h"

namespace moex::model {
namespace {

using nlohmann::json;

// Partial RoPE: int(head_dim * partial_rotary_factor) leading features (python's int()).
int64_t rotated_dims(const json& j, const std::string& f, int64_t head_dim) {
  const double partial = io::get_double(j, "partial_rotary_factor", f);
  const bool in_range = partial > 0.0 && partial <= 1.0;
  const int64_t dims = in_range ? int64_t(double(head_dim) * partial) : 0;
  if (!in_range || dims < 2 || dims % 2 != 0)
    fail(f, ": field 'partial_rotary_factor' = ", partial,
         " must give an even number of rotated dims in [2, head_dim = ", head_dim, "]");
  return dims;
}

class Qwen3NextFamily final : public Family {
 public:
  const char* name() const override { return "qwen3_next"; }
  std::vector<std::string> model_types() const override { return {"qwen3_next"}; }

  ModelConfig parse(const json& j, const std::string& f) const override {
    ModelConfig c = arch::begin_config(name(), j, f);
    arch::DecoderDefaults dims;
    dims.head_dim = arch::HeadDimRule::kField;
    arch::parse_decoder_dims(j, f, dims, c);
    c.norm = NormKind::kRmsNorm;
    c.norm_eps = io::get_double(j, "rms_norm_eps", f);
    c.qk_norm = QkNormKind::kPerHead;
    c.qk_norm_eps = c.norm_eps;
    c.attn_scale = arch::default_attn_scale(c.head_dim);
    const bool bias = io::get_bool_or(j, "attention_bias", false, f);
    c.q_bias = c.k_bias = c.v_bias = c.o_bias = bias;
    io::get_double(j, "rope_theta", f);  // required by mlx-lm's ModelArgs
    const int64_t rot = rotated_dims(j, f, c.head_dim);
    // mlx-lm initialize_rope(dims = rot, rope_theta, rope_scaling): the scaling types see the
    // rotated dims as the rope's width.
    c.rope = arch::parse_rope(j, f, rot, c.max_position, 10000.0, false);
    c.rope.dims = rot;
    GatedDeltaParams& g = c.gdn;
    g.k_heads = arch::get_size(j, "linear_num_key_heads", limits::kMaxHeads, f);
    g.v_heads = arch::get_size(j, "linear_num_value_heads", limits::kMaxHeads, f);
    g.k_head_dim = arch::get_size(j, "linear_key_head_dim", limits::kMaxHeadDim, f);
    g.v_head_dim = arch::get_size(j, "linear_value_head_dim", limits::kMaxHeadDim, f);
    g.conv_kernel = arch::get_size(j, "linear_conv_kernel_dim", limits::kMaxConvKernel, f);
    if (g.v_heads % g.k_heads != 0)
      fail(f, ": field 'linear_num_value_heads' (", g.v_heads,
           ") must be a multiple of 'linear_num_key_heads' (", g.k_heads, ")");
    const int64_t interval = arch::get_size_or(j, "full_attention_interval", 4,
                                               limits::kMaxLayers, f);
    c.dense_dff = arch::get_size(j, "intermediate_size", limits::kMaxDff, f);
    c.moe.num_experts = arch::get_size(j, "num_experts", limits::kMaxExperts, f, 0);
    c.moe.top_k = arch::get_size(j, "num_experts_per_tok", limits::kMaxExperts, f);
    c.moe.expert_dff = arch::get_size(j, "moe_intermediate_size", limits::kMaxDff, f);
    c.moe.shared_dff =
        arch::get_size(j, "shared_expert_intermediate_size", limits::kMaxDff, f);
    c.moe.shared_expert_gated = true;
    const bool renorm = io::get_bool_or(j, "norm_topk_prob", false, f);
    c.moe.router = renorm ? RouterKind::kSoftmaxTopkRenorm : RouterKind::kSoftmaxTopkNoRenorm;
    c.moe.renormalize = renorm;
    c.moe.topk_ties_to_higher_index = true;  // argpartition(gates, kth=-k)[..., -k:]
    const int64_t step = arch::get_size(j, "decoder_sparse_step", limits::kMaxLayers, f);
    if (!io::has_field(j, "mlp_only_layers"))
      fail(f, ": missing field 'mlp_only_layers' (a list of layer indices, may be empty)");
    const std::vector<int64_t> mlp_only = io::get_int_array(j, "mlp_only_layers", f);
    c.tie_word_embeddings = io::get_bool_or(j, "tie_word_embeddings", false, f);
    c.hf_layout_norms_plus_one = true;
    arch::set_llama_model_names(c, j, f);
    for (int64_t i = 0; i < c.num_layers; ++i) {
      const bool dense = std::find(mlp_only.begin(), mlp_only.end(), i) != mlp_only.end() ||
                         c.moe.num_experts <= 0 || (i + 1) % step != 0;
      LayerPlan l = arch::llama_layer_plan(c, dense ? FfnKind::kDense : FfnKind::kMoe,
                                           dense ? c.dense_dff : c.moe.expert_dff);
      const std::string p = "model.layers." + std::to_string(i);
      LayerModules& n = l.names;
      if ((i + 1) % interval == 0) {
        arch::set_llama_attention_names(n, p, true);
        l.attn_output_gate = true;
      } else {
        n.input_norm = p + ".input_layernorm";
        n.post_norm = p + ".post_attention_layernorm";
        l.mixer = MixerKind::kGatedDeltaNet;
        l.use_rope = false;
        l.qk_norm = false;
        const std::string a = p + ".linear_attn";
        n.gdn_qkvz = a + ".in_proj_qkvz";
        n.gdn_ba = a + ".in_proj_ba";
        n.gdn_conv = a + ".conv1d";
        n.gdn_dt_bias = a + ".dt_bias";
        n.gdn_a_log = a + ".A_log";
        n.gdn_norm = a + ".norm";
        n.gdn_out = a + ".out_proj";
      }
      if (dense) {
        arch::set_dense_mlp_names(n, p + ".mlp");
      } else {
        arch::set_switch_mlp_names(n, p + ".mlp", "gate", "gate_proj", "up_proj", "down_proj");
        arch::set_shared_mlp_names(n, p + ".mlp.shared_expert");
        n.shared_expert_gate = p + ".mlp.shared_expert_gate";
      }
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
    json j = arch::base_preset_config(p, "Qwen3NextForCausalLM");
    j["head_dim"] = p.head_dim;
    j["intermediate_size"] = p.dense_dff > 0 ? p.dense_dff : 5 * p.hidden / 2;
    j["moe_intermediate_size"] = p.moe_dff;
    j["shared_expert_intermediate_size"] = p.shared_dff;
    j["num_experts"] = p.experts;
    j["num_experts_per_tok"] = p.top_k;
    j["norm_topk_prob"] = true;
    j["decoder_sparse_step"] = 1;
    json only = json::array();
    for (int64_t i = 0; i < p.dense_layers; ++i) only.push_back(i);
    j["mlp_only_layers"] = only;
    j["linear_num_key_heads"] = p.linear_k_heads;
    j["linear_num_value_heads"] = p.linear_v_heads;
    j["linear_key_head_dim"] = p.linear_k_head_dim;
    j["linear_value_head_dim"] = p.linear_v_head_dim;
    j["linear_conv_kernel_dim"] = 4;
    j["full_attention_interval"] = p.full_attention_interval;
    j["partial_rotary_factor"] = 0.25;
    j["rms_norm_eps"] = 1e-6;
    j["rope_theta"] = p.tiny ? 10000.0 : 5000000.0;
    j["rope_scaling"] = nullptr;
    j["tie_word_embeddings"] = p.tie_embeddings;
    j["attention_bias"] = false;
    j["hidden_act"] = "silu";
    return j;
  }
};

}  // namespace
}  // namespace moex::model

MOEX_DEFINE_FAMILY(qwen3_next, Qwen3NextFamily)
