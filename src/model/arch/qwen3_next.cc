// Qwen3-Next (model_type qwen3_next; mlx-lm models/qwen3_next.py) and Qwen3.5-MoE (below): every
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

// What Qwen3-Next and Qwen3.5 read alike from the text config j: decoder dims and norms, the
// gated attention (per-head q/k norm, partial RoPE from rope: a json with rope_theta,
// partial_rotary_factor and rope_scaling), the Gated DeltaNet heads, MoE routing and the
// sigmoid-gated shared expert. norm_topk_default is norm_topk_prob when the field is absent:
// mlx-lm's qwen3_next ModelArgs says false, qwen3_5's TextModelArgs true (the released
// Qwen3.5-MoE configs leave the field out). Returns full_attention_interval.
int64_t parse_hybrid(const json& j, const std::string& f, const json& rope,
                     bool norm_topk_default, ModelConfig& c) {
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
  io::get_double(rope, "rope_theta", f);  // required by mlx-lm's ModelArgs
  const int64_t rot = rotated_dims(rope, f, c.head_dim);
  // mlx-lm initialize_rope(dims = rot, rope_theta, rope_scaling): the scaling types see the
  // rotated dims as the rope's width.
  c.rope = arch::parse_rope(rope, f, rot, c.max_position, 10000.0, false);
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
  c.moe.num_experts = arch::get_size(j, "num_experts", limits::kMaxExperts, f, 0);
  if (c.moe.num_experts > 0) {
    c.moe.top_k = arch::get_size(j, "num_experts_per_tok", limits::kMaxExperts, f);
    c.moe.expert_dff = arch::get_size(j, "moe_intermediate_size", limits::kMaxDff, f);
    c.moe.shared_dff =
        arch::get_size(j, "shared_expert_intermediate_size", limits::kMaxDff, f);
  }
  c.moe.shared_expert_gated = true;
  const bool renorm = io::get_bool_or(j, "norm_topk_prob", norm_topk_default, f);
  // Qwen3-MoE's router: softmax, argpartition(gates, kth=-k)[..., -k:], norm_topk_prob.
  c.moe.router = moe::qwen3_moe_router(c.moe.num_experts, c.moe.top_k, renorm);
  c.tie_word_embeddings = io::get_bool_or(j, "tie_word_embeddings", false, f);
  return interval;
}

// Layer i's mixer: gated attention every interval-th layer, else Gated DeltaNet with the
// Qwen3-Next interleaved projections (split = false) or Qwen3.5's separate ones.
void set_mixer(LayerPlan& l, const std::string& p, int64_t i, int64_t interval, bool split) {
  LayerModules& n = l.names;
  if ((i + 1) % interval == 0) {
    arch::set_llama_attention_names(n, p, true);
    l.attn_output_gate = true;
    return;
  }
  n.input_norm = p + ".input_layernorm";
  n.post_norm = p + ".post_attention_layernorm";
  l.mixer = MixerKind::kGatedDeltaNet;
  l.use_rope = false;
  l.qk_norm = false;
  const std::string a = p + ".linear_attn";
  if (split) {
    n.gdn_qkv = a + ".in_proj_qkv";
    n.gdn_z = a + ".in_proj_z";
    n.gdn_b = a + ".in_proj_b";
    n.gdn_a = a + ".in_proj_a";
  } else {
    n.gdn_qkvz = a + ".in_proj_qkvz";
    n.gdn_ba = a + ".in_proj_ba";
  }
  n.gdn_conv = a + ".conv1d";
  n.gdn_dt_bias = a + ".dt_bias";
  n.gdn_a_log = a + ".A_log";
  n.gdn_norm = a + ".norm";
  n.gdn_out = a + ".out_proj";
}

void set_moe(LayerModules& n, const std::string& p) {
  arch::set_switch_mlp_names(n, p + ".mlp", "gate", "gate_proj", "up_proj", "down_proj");
  arch::set_shared_mlp_names(n, p + ".mlp.shared_expert");
  n.shared_expert_gate = p + ".mlp.shared_expert_gate";
}

// Qwen3.5's experts in the Hub's layout: fused only (mlx-lm's sanitize maps no per-expert names).
void set_fused_experts(LayerModules& n, const std::string& p) {
  n.hf_expert_gate.clear();
  n.hf_expert_up.clear();
  n.hf_expert_down.clear();
  n.hf_experts_gate_up = p + ".mlp.experts.gate_up_proj";
  n.hf_experts_down = p + ".mlp.experts.down_proj";
  n.hf_fused = HfFusedExperts::kOutputsFirst;
}

// The multi-token-prediction module's decoder layer (model/mtp_plan.h): a gated-attention layer
// of the family named mtp.layers.0, as vLLM's qwen3_next_mtp.py and qwen3_5_mtp.py build it
// (layer_type "full_attention"), with the experts in the main layers' layout.
LayerPlan mtp_decoder_layer(const ModelConfig& c, bool dense, bool qwen35) {
  const std::string p = "mtp.layers.0";
  LayerPlan l = arch::llama_layer_plan(c, dense ? FfnKind::kDense : FfnKind::kMoe,
                                       dense ? c.dense_dff : c.moe.expert_dff);
  set_mixer(l, p, 0, 1, qwen35);  // interval 1: attention
  if (dense) {
    arch::set_dense_mlp_names(l.names, p + ".mlp");
  } else {
    set_moe(l.names, p);
    if (qwen35) set_fused_experts(l.names, p);
  }
  return l;
}

// The text-config fields both families' presets write alike (MoE, Gated DeltaNet heads,
// attention, norms).
void hybrid_preset_fields(const ModelPreset& p, json& j) {
  j["head_dim"] = p.head_dim;
  j["moe_intermediate_size"] = p.moe_dff;
  j["shared_expert_intermediate_size"] = p.shared_dff;
  j["num_experts"] = p.experts;
  j["num_experts_per_tok"] = p.top_k;
  j["norm_topk_prob"] = true;
  j["linear_num_key_heads"] = p.linear_k_heads;
  j["linear_num_value_heads"] = p.linear_v_heads;
  j["linear_key_head_dim"] = p.linear_k_head_dim;
  j["linear_value_head_dim"] = p.linear_v_head_dim;
  j["linear_conv_kernel_dim"] = 4;
  j["full_attention_interval"] = p.full_attention_interval;
  j["rms_norm_eps"] = 1e-6;
  j["tie_word_embeddings"] = p.tie_embeddings;
  j["attention_bias"] = false;
  j["hidden_act"] = "silu";
}

class Qwen3NextFamily final : public Family {
 public:
  const char* name() const override { return "qwen3_next"; }
  std::vector<std::string> model_types() const override { return {"qwen3_next"}; }

  ModelConfig parse(const json& j, const std::string& f) const override {
    ModelConfig c = arch::begin_config(name(), j, f);
    const int64_t interval = parse_hybrid(j, f, j, false, c);
    c.dense_dff = arch::get_size(j, "intermediate_size", limits::kMaxDff, f);
    const int64_t step = arch::get_size(j, "decoder_sparse_step", limits::kMaxLayers, f);
    if (!io::has_field(j, "mlp_only_layers"))
      fail(f, ": missing field 'mlp_only_layers' (a list of layer indices, may be empty)");
    const std::vector<int64_t> mlp_only = io::get_int_array(j, "mlp_only_layers", f);
    c.hf_layout_norms_plus_one = true;
    arch::set_llama_model_names(c, j, f);
    for (int64_t i = 0; i < c.num_layers; ++i) {
      const bool dense = std::find(mlp_only.begin(), mlp_only.end(), i) != mlp_only.end() ||
                         c.moe.num_experts <= 0 || (i + 1) % step != 0;
      LayerPlan l = arch::llama_layer_plan(c, dense ? FfnKind::kDense : FfnKind::kMoe,
                                           dense ? c.dense_dff : c.moe.expert_dff);
      const std::string p = "model.layers." + std::to_string(i);
      set_mixer(l, p, i, interval, false);
      if (dense)
        arch::set_dense_mlp_names(l.names, p + ".mlp");
      else
        set_moe(l.names, p);
      c.layers.push_back(std::move(l));
    }
    validate_model_config(c);
    return c;
  }

  // mlx-lm's sanitize drops the multi-token-prediction weights the Hub's checkpoints carry
  // (every name containing "mtp.", e.g. mtp.fc.weight, mtp.layers.0.*), and pops
  // lm_head.weight when the embeddings are tied.
  bool reference_drops(const ModelConfig& c, std::string_view tensor) const override {
    return tensor.find("mtp.") != std::string_view::npos || arch::drops_tied_lm_head(c, tensor);
  }

  // vLLM's Qwen3NextDecoderLayer decides the module layer's MLP as a main layer's, from the
  // index in its name (0): MoE unless 0 is in mlp_only_layers or off the decoder_sparse_step
  // grid.
  std::optional<LayerPlan> mtp_layer(const ModelConfig& c, const json& j,
                                     const std::string& f) const override {
    const int64_t step = arch::get_size(j, "decoder_sparse_step", limits::kMaxLayers, f);
    const std::vector<int64_t> only = io::get_int_array(j, "mlp_only_layers", f);
    const bool dense = std::find(only.begin(), only.end(), 0) != only.end() ||
                       c.moe.num_experts <= 0 || 1 % step != 0;
    return mtp_decoder_layer(c, dense, false);
  }

  json preset_config(const ModelPreset& p) const override {
    json j = arch::base_preset_config(p, "Qwen3NextForCausalLM");
    hybrid_preset_fields(p, j);
    j["intermediate_size"] = p.dense_dff > 0 ? p.dense_dff : 5 * p.hidden / 2;
    j["decoder_sparse_step"] = 1;
    json only = json::array();
    for (int64_t i = 0; i < p.dense_layers; ++i) only.push_back(i);
    j["mlp_only_layers"] = only;
    j["partial_rotary_factor"] = 0.25;
    j["rope_theta"] = p.tiny ? 10000.0 : 5000000.0;
    j["rope_scaling"] = nullptr;
    return j;
  }

  // mlx-lm's quant_predicate: the router and the shared expert's gate at 8 bits, group 64.
  std::optional<QuantOverride> reference_quant_override(const ModelConfig&,
                                                        std::string_view path) const override {
    if (path.ends_with("mlp.gate") || path.ends_with("shared_expert_gate")) return QuantOverride{};
    return std::nullopt;
  }
};


// Qwen3.5-MoE (model_type qwen3_5_moe; mlx-lm models/qwen3_5_moe.py over qwen3_5.py): the
// Qwen3-Next layers in the multimodal wrapper's text_config (a config.json without one is read
// as the text config itself, as mlx-lm does), tensors under language_model.model.* and
// language_model.lm_head. RoPE comes from rope_parameters (rope_theta, partial_rotary_factor;
// it is also rope_scaling, type default for the released models; its mrope_section is for the
// vision tower's 3-D positions and leaves text positions plain RoPE). Gated DeltaNet takes
// separate in_proj_qkv / _z / _b / _a. Every layer is MoE when num_experts > 0 (qwen3_5's
// DecoderLayer has no mlp_only_layers or decoder_sparse_step), else a dense MLP. Read as
// mlx-lm's converter writes it or in the Hub's layout, as mlx-lm's qwen3_5_moe sanitize maps
// it: model.language_model.* and lm_head.* renamed under language_model., the experts fused
// outputs-first (experts.gate_up_proj [E, 2*Dff, H], gate rows first; experts.down_proj
// [E, H, Dff]), PyTorch's Conv1d layout, and the decoder norms stored zero-centred (1 + w).
class Qwen35MoeFamily final : public Family {
 public:
  const char* name() const override { return "qwen3_5_moe"; }
  std::vector<std::string> model_types() const override { return {"qwen3_5_moe"}; }

  ModelConfig parse(const json& top, const std::string& file) const override {
    const json* text = io::get_object_or_null(top, "text_config", file);
    const json& j = text ? *text : top;
    const std::string f = text ? file + ": text_config" : file;
    ModelConfig c = arch::begin_config(name(), top, file);
    // mlx-lm TextModelArgs: rope_parameters (default type default, rope_theta 1e5, partial
    // 0.25) gives rope_theta and partial_rotary_factor and serves as rope_scaling.
    json rope = {{"rope_theta", 100000.0}, {"partial_rotary_factor", 0.25}};
    if (const json* rp = io::get_object_or_null(j, "rope_parameters", f)) {
      const std::string where = f + ": rope_parameters";
      rope["rope_theta"] = io::get_double_or(*rp, "rope_theta", 100000.0, where);
      rope["partial_rotary_factor"] = io::get_double_or(*rp, "partial_rotary_factor", 0.25, where);
      rope["rope_scaling"] = *rp;
    }
    const int64_t interval = parse_hybrid(j, f, rope, true, c);
    const bool moe = c.moe.num_experts > 0;
    if (!moe) c.dense_dff = arch::get_size(j, "intermediate_size", limits::kMaxDff, f);
    c.embed_name = "language_model.model.embed_tokens";
    c.final_norm_name = "language_model.model.norm";
    c.lm_head_name = c.tie_word_embeddings ? "" : "language_model.lm_head";
    c.eos_token_ids = arch::parse_eos(io::has_field(j, "eos_token_id") ? j : top, file);
    c.bos_token_id = io::get_int_or(top, "bos_token_id", -1, file);
    // mlx-lm adds 1 to the norms when the conv weights are in PyTorch's layout, which only the
    // Hub's checkpoints (fused experts, never stacked) have.
    c.hf_layout_norms_plus_one = moe;
    for (int64_t i = 0; i < c.num_layers; ++i) {
      LayerPlan l = arch::llama_layer_plan(c, moe ? FfnKind::kMoe : FfnKind::kDense,
                                           moe ? c.moe.expert_dff : c.dense_dff);
      const std::string p = "language_model.model.layers." + std::to_string(i);
      set_mixer(l, p, i, interval, true);
      if (moe) {
        set_moe(l.names, p);
        set_fused_experts(l.names, p);
      } else
        arch::set_dense_mlp_names(l.names, p + ".mlp");
      c.layers.push_back(std::move(l));
    }
    validate_model_config(c);
    return c;
  }

  // The Hub's names, under the ones mlx-lm's qwen3_5_moe sanitize gives them.
  std::string reference_rename(const ModelConfig& c, std::string_view t) const override {
    (void)c;
    for (const auto& [hub, mlx] : {std::pair<std::string_view, std::string_view>{
                                       "model.language_model.", "language_model.model."},
                                   {"lm_head.", "language_model.lm_head."}})
      if (t.substr(0, hub.size()) == hub)
        return std::string(mlx) + std::string(t.substr(hub.size()));
    return {};
  }

  // mlx-lm's sanitize drops the vision tower, the multi-token-prediction head (mtp.*), and
  // lm_head when the embeddings are tied.
  bool reference_drops(const ModelConfig& c, std::string_view tensor) const override {
    for (std::string_view drop : {"vision_tower", "model.visual", "language_model.vision_tower"})
      if (tensor.substr(0, drop.size()) == drop) return true;
    if (tensor.find("mtp.") != std::string_view::npos) return true;
    return c.tie_word_embeddings && tensor.substr(0, 24) == "language_model.lm_head.w";
  }

  // vLLM's Qwen3_5DecoderLayer: MoE whenever the model has experts, as every main layer.
  std::optional<LayerPlan> mtp_layer(const ModelConfig& c, const json&,
                                     const std::string&) const override {
    return mtp_decoder_layer(c, c.moe.num_experts <= 0, true);
  }

  json preset_config(const ModelPreset& p) const override {
    json j = arch::base_preset_config(p, "Qwen3_5MoeForConditionalGeneration");
    j["model_type"] = "qwen3_5_moe_text";
    hybrid_preset_fields(p, j);
    j["rope_parameters"] = {{"rope_type", "default"},
                            {"rope_theta", p.tiny ? 10000.0 : 10000000.0},
                            {"partial_rotary_factor", 0.25},
                            {"mrope_section", {11, 11, 10}},
                            {"mrope_interleaved", true}};
    json top = {{"model_type", "qwen3_5_moe"},
                {"architectures", {"Qwen3_5MoeForConditionalGeneration"}},
                {"tie_word_embeddings", p.tie_embeddings},
                {"text_config", j}};
    if (j.contains("eos_token_id")) top["eos_token_id"] = j["eos_token_id"];
    if (j.contains("bos_token_id")) top["bos_token_id"] = j["bos_token_id"];
    return top;
  }

  // mlx-lm's quant_predicate (qwen3_5, MoE models only): the router and the shared expert's gate at
  // 8 bits, group 64.
  std::optional<QuantOverride> reference_quant_override(const ModelConfig& c,
                                                        std::string_view path) const override {
    if (c.moe.num_experts <= 0) return std::nullopt;
    if (path.ends_with("mlp.gate") || path.ends_with("shared_expert_gate")) return QuantOverride{};
    return std::nullopt;
  }

  // mlx-lm's cast_predicate (qwen3_5): A_log keeps its stored dtype.
  bool reference_keeps_dtype(const ModelConfig&, std::string_view tensor) const override {
    return tensor.ends_with("A_log");
  }
};

}  // namespace
}  // namespace moex::model

MOEX_DEFINE_FAMILY(qwen3_next, Qwen3NextFamily)
MOEX_DEFINE_FAMILY(qwen3_5_moe, Qwen35MoeFamily)
