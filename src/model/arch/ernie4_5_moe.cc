// ERNIE-4.5 MoE (model_type ernie4_5_moe; mlx-lm models/ernie4_5_moe.py): GQA with q/k/v/o
// biases when use_bias, interleaved ("traditional") RoPE over the full head (rope_scaling is
// not read), no q/k norm; MoE layers chosen by moe_layer_start_index / moe_layer_end_index /
// moe_layer_interval, dense layers of intermediate_size otherwise; a Linear router, softmax (or
// sigmoid, moe_gate_act) over all experts, top-k, divided by max(sum, 1e-12); ungated shared
// experts of moe_num_shared_experts x the expert size. mlx-lm's sanitize drops the MTP block and
// e_score_correction_bias, which its forward pass never reads (docs/families.md), unless moex's
// own route_with_correction_bias field asks for the Hugging Face model's biased selection.
#include <algorithm>

#include "core/error.h"
#include "io/json_config.h"
#include "model/arch/family_common.h"
#include "model/family_registry.h"

namespace moex::model {
namespace {

using nlohmann::json;

// moe_layer_start_index / moe_layer_end_index: an integer, or a list of which mlx-lm takes the
// min (start) or max (end). Each value is a layer index in [0, kMaxLayers].
int64_t get_layer_index(const json& j, const char* field, bool take_max, int64_t def,
                        const std::string& f) {
  if (!io::has_field(j, field) || j[field].is_null()) return def;
  std::vector<int64_t> v;
  if (j[field].is_array())
    v = io::get_int_array(j, field, f);
  else
    v.push_back(arch::get_size(j, field, limits::kMaxLayers, f, 0));
  if (v.empty()) fail(f, ": field '", field, "' is an empty list; expected a layer index");
  for (int64_t x : v)
    if (x < 0 || x > limits::kMaxLayers)
      fail(f, ": field '", field, "' holds ", x, "; expected layer indices in [0, ",
           limits::kMaxLayers, "]");
  return take_max ? *std::max_element(v.begin(), v.end()) : *std::min_element(v.begin(), v.end());
}

class Ernie45MoeFamily final : public Family {
 public:
  const char* name() const override { return "ernie4_5_moe"; }
  std::vector<std::string> model_types() const override { return {"ernie4_5_moe"}; }

  ModelConfig parse(const json& j, const std::string& f) const override {
    ModelConfig c = arch::begin_config(name(), j, f);
    // mlx-lm: head_dim = args.head_dim or hidden_size // heads, so 0 means derived.
    if (io::has_field(j, "head_dim") && j.at("head_dim").is_number_integer() &&
        j.at("head_dim").get<int64_t>() == 0) {
      json derived = j;
      derived.erase("head_dim");
      arch::parse_decoder_dims(derived, f, arch::DecoderDefaults{}, c);
    } else {
      arch::parse_decoder_dims(j, f, arch::DecoderDefaults{}, c);
    }
    c.norm = NormKind::kRmsNorm;
    c.norm_eps = io::get_double(j, "rms_norm_eps", f);
    c.attn_scale = arch::default_attn_scale(c.head_dim);
    // use_bias puts biases on q/k/v/o and on every MLP projection, experts included; moex's
    // dense and shared MLPs have none, so it is refused (the released models set it false).
    if (io::get_bool(j, "use_bias", f))
      fail(f, ": field 'use_bias' is true: ERNIE-4.5 with MLP biases is not supported (the "
              "released models set it false)");
    // mlx-lm: initialize_rope(head_dim, rope_theta, traditional=True), no scaling config.
    c.rope = arch::parse_rope(json{{"rope_theta", io::get_double(j, "rope_theta", f)}}, f,
                              c.head_dim, c.max_position, 10000.0, true);
    c.dense_dff = arch::get_size(j, "intermediate_size", limits::kMaxDff, f);
    c.moe.num_experts = arch::get_size(j, "moe_num_experts", limits::kMaxExperts, f);
    c.moe.top_k = arch::get_size_or(j, "moe_k", 1, limits::kMaxExperts, f);
    const int64_t moe_dff = arch::get_size(j, "moe_intermediate_size", limits::kMaxDff, f, 0);
    c.moe.expert_dff = moe_dff > 0 ? moe_dff : c.dense_dff;  // mlx-lm: 0 means intermediate_size
    const std::string act =
        io::has_field(j, "moe_gate_act") ? io::get_string(j, "moe_gate_act", f) : "softmax";
    if (act != "softmax" && act != "sigmoid")
      fail(f, ": field 'moe_gate_act' is \"", act, "\"; expected \"softmax\" or \"sigmoid\"");
    // route_with_correction_bias is moex's own field (ERNIE's configs have none, so the mlx-lm
    // reading of a checkpoint directory is unchanged): the selection adds
    // mlp.moe_statics.e_score_correction_bias [E], as the Hugging Face model does and mlx-lm
    // does not (its sanitize drops the tensor). The GGUF mapping sets it for files with
    // exp_probs_b, which llama.cpp's graph adds to the selection.
    c.moe.use_expert_bias = io::get_bool_or(j, "route_with_correction_bias", false, f);
    c.moe.router = moe::ernie4_5_moe_router(c.moe.num_experts, c.moe.top_k, act == "sigmoid",
                                            c.moe.use_expert_bias);
    const int64_t shared = arch::get_size(j, "moe_num_shared_experts", 64, f, 0);
    c.moe.shared_dff = shared * c.moe.expert_dff;
    const int64_t start = get_layer_index(j, "moe_layer_start_index", false, 0, f);
    const int64_t end = get_layer_index(j, "moe_layer_end_index", true, c.num_layers - 1, f);
    const int64_t interval = arch::get_size_or(j, "moe_layer_interval", 1, limits::kMaxLayers, f);
    c.tie_word_embeddings = io::get_bool(j, "tie_word_embeddings", f);
    arch::set_llama_model_names(c, j, f);
    for (int64_t i = 0; i < c.num_layers; ++i) {
      const bool moe = (i + 1) % interval == 0 && i >= start && i <= end;
      LayerPlan l = arch::llama_layer_plan(c, moe ? FfnKind::kMoe : FfnKind::kDense,
                                           moe ? c.moe.expert_dff : c.dense_dff);
      const std::string p = "model.layers." + std::to_string(i);
      arch::set_llama_attention_names(l.names, p, false);
      if (!moe) {
        arch::set_dense_mlp_names(l.names, p + ".mlp");
      } else {
        arch::set_switch_mlp_names(l.names, p + ".mlp", "gate", "gate_proj", "up_proj",
                                   "down_proj");
        if (c.moe.use_expert_bias)
          l.names.expert_bias = p + ".mlp.moe_statics.e_score_correction_bias";
        if (shared > 0) {
          arch::set_shared_mlp_names(l.names, p + ".mlp.shared_experts");
        }
      }
      c.layers.push_back(std::move(l));
    }
    validate_model_config(c);
    return c;
  }

  // mlx-lm's sanitize: the multi-token-prediction block and the aux-free correction bias.
  bool reference_drops(const ModelConfig&, std::string_view tensor) const override {
    for (std::string_view pat : {"mtp_block.", "mtp_linear_proj.", "mtp_hidden_norm.",
                                 "mtp_emb_norm.", "e_score_correction_bias"})
      if (tensor.find(pat) != std::string_view::npos) return true;
    return false;
  }

  json preset_config(const ModelPreset& p) const override {
    json j = arch::base_preset_config(p, "Ernie4_5_MoeForCausalLM");
    // baidu/ERNIE-4.5-21B-A3B-PT: MoE from layer 1 on, 2 shared experts, tied embeddings.
    j["head_dim"] = p.head_dim;
    j["intermediate_size"] = p.dense_dff;
    j["moe_intermediate_size"] = p.moe_dff;
    j["moe_num_experts"] = p.experts;
    j["moe_k"] = p.top_k;
    j["moe_num_shared_experts"] = p.shared_dff / p.moe_dff;
    j["moe_layer_start_index"] = p.dense_layers;
    j["moe_layer_end_index"] = p.layers - 1;
    j["moe_layer_interval"] = 1;
    j["moe_gate_act"] = "softmax";
    j["moe_use_aux_free"] = true;
    j["use_bias"] = false;
    j["rms_norm_eps"] = 1e-5;
    j["rope_theta"] = 500000.0;
    j["tie_word_embeddings"] = p.tie_embeddings;
    j["hidden_act"] = "silu";
    return j;
  }
};

}  // namespace
}  // namespace moex::model

MOEX_DEFINE_FAMILY(ernie4_5_moe, Ernie45MoeFamily)
