// Nemotron-H (model_type nemotron_h; mlx-lm models/nemotron_h.py), e.g. Nemotron-3-Nano-30B-A3B:
// a stack of single-purpose blocks, each x + mixer(RMSNorm(x)), whose kinds the hybrid pattern
// gives: 'M' Mamba-2, '*' attention (GQA, no RoPE, no q/k norm), '-' a relu2 MLP (up, down),
// 'E' an MoE of relu2 experts (sigmoid scores + e_score_correction_bias for the selection,
// group-limited top-k, renormalized with + 1e-20, routed_scaling_factor) plus a relu2 shared
// expert. A moex layer is one block: a mixer without an FFN or an FFN without a mixer.
#include <cmath>
#include <limits>

#include "core/error.h"
#include "io/json_config.h"
#include "model/arch/family_common.h"
#include "model/family_registry.h"

namespace moex::model {
namespace {

using nlohmann::json;

// The block kinds, one character each, from hybrid_override_pattern (a string or a list of
// one-character strings) or else from layers_block_type / layer_types (names), as mlx-lm's
// ModelArgs normalizes them.
std::string block_pattern(const json& j, const std::string& f) {
  std::string pattern;
  if (io::has_field(j, "hybrid_override_pattern")) {
    const json& p = j["hybrid_override_pattern"];
    if (p.is_string()) {
      pattern = p.get<std::string>();
    } else {
      for (const std::string& s : io::get_string_array(j, "hybrid_override_pattern", f)) {
        if (s.size() != 1)
          fail(f, ": field 'hybrid_override_pattern' holds '", s, "'; expected single characters");
        pattern += s;
      }
    }
  } else {
    const char* field = io::has_field(j, "layers_block_type") ? "layers_block_type" : "layer_types";
    if (!io::has_field(j, field))
      fail(f, ": missing field 'hybrid_override_pattern' (or 'layers_block_type'): the layer",
           " stack");
    static const std::pair<const char*, char> kNames[] = {
        {"full_attention", '*'}, {"linear_attention", 'M'}, {"moe", 'E'}, {"mlp", '-'},
        {"attention", '*'},      {"mamba", 'M'},            {"conv", 'M'}};
    for (const std::string& s : io::get_string_array(j, field, f)) {
      char k = 0;
      for (const auto& [name, c] : kNames)
        if (s == name) k = c;
      if (!k)
        fail(f, ": field '", field, "' holds '", s, "'; expected one of full_attention, "
             "linear_attention, moe, mlp, attention, mamba, conv");
      pattern += k;
    }
  }
  if (pattern.empty() || int64_t(pattern.size()) > limits::kMaxLayers)
    fail(f, ": field 'hybrid_override_pattern' has ", pattern.size(), " layers; expected [1, ",
         limits::kMaxLayers, "]");
  for (size_t i = 0; i < pattern.size(); ++i)
    if (std::string_view("M*-E").find(pattern[i]) == std::string_view::npos)
      fail(f, ": field 'hybrid_override_pattern' has '", pattern[i], "' at layer ", i,
           "; expected M (Mamba-2), * (attention), - (MLP) or E (MoE)");
  return pattern;
}

void parse_mamba(const json& j, const std::string& f, ModelConfig& c) {
  Mamba2Params& m = c.mamba;
  m.heads = arch::get_size(j, "mamba_num_heads", limits::kMaxHeads, f);
  m.head_dim = arch::get_size(j, "mamba_head_dim", limits::kMaxHeadDim, f);
  m.state_dim = arch::get_size(j, "ssm_state_size", limits::kMaxHeadDim, f);
  m.groups = arch::get_size(j, "n_groups", limits::kMaxHeads, f);
  m.conv_kernel = arch::get_size(j, "conv_kernel", limits::kMaxConvKernel, f);
  m.conv_bias = io::get_bool(j, "use_conv_bias", f);
  m.proj_bias = io::get_bool(j, "mamba_proj_bias", f);
  if (m.heads % m.groups != 0)
    fail(f, ": field 'mamba_num_heads' (", m.heads, ") must be a multiple of 'n_groups' (",
         m.groups, ")");
  // mlx-lm: time_step_limit, else (0, inf); time_step_min / _max are not the limit. A config
  // that transformers or Python's json wrote holds the default's inf as {"__float__":
  // "Infinity"} or a bare Infinity (io::get_double_array_nonfinite); NaN is refused.
  m.dt_min = 0.0;
  m.dt_max = std::numeric_limits<double>::infinity();
  if (io::has_field(j, "time_step_limit")) {
    const std::vector<double> lim = io::get_double_array_nonfinite(j, "time_step_limit", f);
    if (lim.size() != 2 || !(lim[0] <= lim[1]))
      fail(f, ": field 'time_step_limit' must be [min, max] with min <= max (no NaN)");
    m.dt_min = lim[0];
    m.dt_max = lim[1];
  }
}

void parse_moe(const json& j, const std::string& f, ModelConfig& c) {
  MoeParams& m = c.moe;
  m.num_experts = arch::get_size(j, "n_routed_experts", limits::kMaxExperts, f);
  m.top_k = arch::get_size(j, "num_experts_per_tok", limits::kMaxExperts, f);
  m.expert_dff = arch::get_size(j, "moe_intermediate_size", limits::kMaxDff, f);
  m.router.n_group = arch::get_size_or(j, "n_group", 1, limits::kMaxExperts, f);
  m.router.topk_group = arch::get_size_or(j, "topk_group", 1, limits::kMaxExperts, f);
  arch::check_expert_groups(c, f, "n_routed_experts");
  // DeepSeek's group-limited sigmoid router with an eps in the renormalization (sum + 1e-20);
  // norm_topk_prob None: not normalized. The correction bias is bound with the weights.
  m.router = moe::group_limited_sigmoid_router(
      m.num_experts, m.top_k, io::get_bool_or(j, "norm_topk_prob", false, f),
      float(io::get_double(j, "routed_scaling_factor", f)), {}, m.router.n_group,
      m.router.topk_group);
  m.router.renorm_eps = float(1e-20);
  m.use_expert_bias = true;
  m.router_unquantized = true;  // MoEGate holds a bare weight, never an nn.Linear
  m.activation = ExpertActivation::kReLU2;
  m.shared_activation = ExpertActivation::kReLU2;
  // Any n_shared_experts (not null) gives one shared MLP of the shared size, or else of
  // intermediate_size (mlx-lm: `intermediate_size or args.intermediate_size`).
  if (io::has_field(j, "n_shared_experts")) {
    arch::get_size(j, "n_shared_experts", 64, f);
    m.shared_dff = arch::get_size_or(j, "moe_shared_expert_intermediate_size", c.dense_dff,
                                     limits::kMaxDff, f);
  }
  if (io::has_field(j, "moe_latent_size"))
    fail(f, ": field 'moe_latent_size' (latent expert projections) is not supported yet");
}

class NemotronHFamily final : public Family {
 public:
  const char* name() const override { return "nemotron_h"; }
  std::vector<std::string> model_types() const override { return {"nemotron_h"}; }

  ModelConfig parse(const json& j, const std::string& f) const override {
    ModelConfig c = arch::begin_config(name(), j, f);
    const std::string pattern = block_pattern(j, f);
    arch::DecoderDefaults dims;
    dims.layers = int64_t(pattern.size());  // mlx-lm derives it from the pattern
    arch::parse_decoder_dims(j, f, dims, c);
    if (c.num_layers != int64_t(pattern.size()))
      fail(f, ": field 'num_hidden_layers' (", c.num_layers, ") disagrees with the ",
           pattern.size(), " layers of 'hybrid_override_pattern'");
    c.norm = NormKind::kRmsNorm;
    c.norm_eps = io::get_double(j, "layer_norm_epsilon", f);
    c.attn_scale = arch::default_attn_scale(c.head_dim);
    const bool bias = io::get_bool(j, "attention_bias", f);
    c.q_bias = c.k_bias = c.v_bias = c.o_bias = bias;
    c.rope.kind = RopeKind::kNone;  // Nemotron-H attention has no positional encoding
    io::get_bool(j, "use_bias", f);  // required by mlx-lm's ModelArgs, read by no layer
    if (io::get_bool(j, "mlp_bias", f))
      fail(f, ": field 'mlp_bias' = true (biases on the MLP and shared-expert projections) is "
           "not supported yet");
    c.dense_dff = arch::get_size(j, "intermediate_size", limits::kMaxDff, f);
    c.dense_activation = ExpertActivation::kReLU2;
    parse_mamba(j, f, c);
    if (pattern.find('E') != std::string::npos) parse_moe(j, f, c);
    c.tie_word_embeddings = false;  // mlx-lm's model always has its own lm_head
    c.embed_name = "backbone.embeddings";
    c.final_norm_name = "backbone.norm_f";
    c.lm_head_name = "lm_head";
    c.eos_token_ids = arch::parse_eos(j, f);
    c.bos_token_id = io::get_int_or(j, "bos_token_id", -1, f);
    for (int64_t i = 0; i < c.num_layers; ++i) c.layers.push_back(block(c, pattern[size_t(i)], i));
    validate_model_config(c);
    return c;
  }

  // mlx-lm's sanitize drops the multi-token-prediction weights (mtp.*).
  bool reference_drops(const ModelConfig&, std::string_view tensor) const override {
    return tensor.substr(0, 4) == "mtp.";
  }

  json preset_config(const ModelPreset& p) const override {
    json j = arch::base_preset_config(p, "NemotronHForCausalLM");
    // A layer-reduced preset (make-model --layers N) keeps the pattern's first N blocks.
    if (p.layers < 1 || p.layers > int64_t(p.hybrid_pattern.size()))
      fail("preset ", p.name, ": ", p.layers, " layers; the pattern has ", p.hybrid_pattern.size());
    j["hybrid_override_pattern"] = p.hybrid_pattern.substr(0, size_t(p.layers));
    j["head_dim"] = p.head_dim;
    j["intermediate_size"] = p.dense_dff;
    j["moe_intermediate_size"] = p.moe_dff;
    j["moe_shared_expert_intermediate_size"] = p.shared_dff;
    j["n_routed_experts"] = p.experts;
    j["num_experts_per_tok"] = p.top_k;
    j["n_shared_experts"] = 1;
    // The real model routes without groups; the tiny one keeps 1 of 2 groups so that the
    // group-limited selection acts.
    j["n_group"] = p.tiny ? 2 : 1;
    j["topk_group"] = 1;
    j["norm_topk_prob"] = true;
    j["routed_scaling_factor"] = 2.5;
    j["mamba_num_heads"] = p.mamba_heads;
    j["mamba_head_dim"] = p.mamba_head_dim;
    j["ssm_state_size"] = p.ssm_state;
    j["n_groups"] = p.mamba_groups;
    j["conv_kernel"] = 4;
    j["use_conv_bias"] = true;
    j["mamba_proj_bias"] = false;
    j["mamba_hidden_act"] = "silu";
    j["time_step_min"] = 0.001;
    j["time_step_max"] = 0.1;
    // Clipping that acts on the tiny model's dt (softplus of values around 0).
    if (p.tiny) j["time_step_limit"] = json::array({0.05, 1.0});
    j["mlp_hidden_act"] = "relu2";
    j["mlp_bias"] = false;
    j["attention_bias"] = false;
    j["use_bias"] = false;
    j["layer_norm_epsilon"] = 1e-5;
    j["tie_word_embeddings"] = false;
    return j;
  }

 private:
  static LayerPlan block(const ModelConfig& c, char kind, int64_t i) {
    LayerPlan l;
    l.use_rope = false;
    const std::string p = "backbone.layers." + std::to_string(i), m = p + ".mixer";
    LayerModules& n = l.names;
    if (kind == 'M' || kind == '*') {
      n.input_norm = p + ".norm";
      l.ffn = FfnKind::kNone;
    } else {
      n.post_norm = p + ".norm";
      l.mixer = MixerKind::kNone;
    }
    switch (kind) {
      case 'M':
        l.mixer = MixerKind::kMamba2;
        n.mamba_in = m + ".in_proj";
        n.mamba_conv = m + ".conv1d";
        n.mamba_dt_bias = m + ".dt_bias";
        n.mamba_a_log = m + ".A_log";
        n.mamba_d = m + ".D";
        n.mamba_norm = m + ".norm";
        n.mamba_out = m + ".out_proj";
        break;
      case '*':
        l.mixer = MixerKind::kAttention;
        n.q = m + ".q_proj", n.k = m + ".k_proj", n.v = m + ".v_proj", n.o = m + ".o_proj";
        break;
      case '-':
        l.ffn = FfnKind::kDense;
        l.ffn_dff = c.dense_dff;
        n.dense_up = m + ".up_proj";
        n.dense_down = m + ".down_proj";
        break;
      default:  // 'E'
        l.ffn = FfnKind::kMoe;
        l.ffn_dff = c.moe.expert_dff;
        n.router = m + ".gate";
        n.expert_bias = m + ".gate.e_score_correction_bias";
        n.experts_up = m + ".switch_mlp.fc1";
        n.experts_down = m + ".switch_mlp.fc2";
        n.hf_expert_up = m + ".experts.{e}.up_proj";
        n.hf_expert_down = m + ".experts.{e}.down_proj";
        if (c.moe.shared_dff > 0) {
          n.shared_up = m + ".shared_experts.up_proj";
          n.shared_down = m + ".shared_experts.down_proj";
        }
        break;
    }
    return l;
  }

  // mlx-lm's cast_predicate: e_score_correction_bias and A_log keep their stored dtype.
  bool reference_keeps_dtype(const ModelConfig&, std::string_view tensor) const override {
    return tensor.find("e_score_correction_bias") != std::string_view::npos ||
           tensor.find("A_log") != std::string_view::npos;
  }
};

}  // namespace
}  // namespace moex::model

MOEX_DEFINE_FAMILY(nemotron_h, NemotronHFamily)
