// Shared family helpers: RoPE / eos parsing, llama-style tensor names, preset config basics.
#include "model/arch/family_common.h"

#include <cmath>
#include <utility>

#include "core/error.h"
#include "io/json_config.h"

namespace moex::model::arch {

using nlohmann::json;

namespace {

// The theta, from rope_theta or rope_parameters.rope_theta.
double parse_theta(const json& cfg, const std::string& file, double def) {
  if (io::has_field(cfg, "rope_theta")) return io::get_double(cfg, "rope_theta", file);
  if (const json* rp = io::get_object_or_null(cfg, "rope_parameters", file))
    return io::get_double_or(*rp, "rope_theta", def, file + ": rope_parameters");
  return def;
}

}  // namespace

int64_t get_size(const json& j, const char* field, int64_t hi, const std::string& file,
                 int64_t lo) {
  return io::get_int_in(j, field, lo, hi, file);
}

int64_t get_size_or(const json& j, const char* field, int64_t def, int64_t hi,
                    const std::string& file) {
  return io::has_field(j, field) ? io::get_int_in(j, field, 1, hi, file) : def;
}

void parse_decoder_dims(const json& j, const std::string& f, const DecoderDefaults& d,
                        ModelConfig& c) {
  auto size = [&](const char* field, std::optional<int64_t> def, int64_t hi) {
    return def ? get_size_or(j, field, *def, hi, f) : get_size(j, field, hi, f);
  };
  c.hidden = size("hidden_size", d.hidden, limits::kMaxHidden);
  c.num_layers = size("num_hidden_layers", d.layers, limits::kMaxLayers);
  c.vocab = size("vocab_size", d.vocab, limits::kMaxVocab);
  c.max_position = size("max_position_embeddings", d.max_position, limits::kMaxPosition);
  c.heads = size("num_attention_heads", d.heads, limits::kMaxHeads);
  c.kv_heads = size("num_key_value_heads", d.kv_heads_default_to_heads ? c.heads : d.kv_heads,
                    c.heads);
  const bool derive = d.head_dim == HeadDimRule::kHiddenOverHeads ||
                      (d.head_dim == HeadDimRule::kFieldOrHiddenOverHeads && !io::has_field(j, "head_dim"));
  if (derive) {
    if (c.hidden % c.heads != 0)
      fail(f, ": hidden_size (", c.hidden, ") must be a multiple of num_attention_heads (", c.heads,
           ") when head_dim is derived from them");
    c.head_dim = c.hidden / c.heads;
  } else {
    c.head_dim = get_size(j, "head_dim", limits::kMaxHeadDim, f);
  }
}

RopeParams parse_rope(const json& cfg, const std::string& file, int64_t head_dim,
                      int64_t max_position, double default_theta, bool traditional) {
  RopeParams r;
  r.theta = parse_theta(cfg, file, default_theta);
  if (!(r.theta > 0)) fail(file, ": field 'rope_theta' must be positive, got ", r.theta);
  r.traditional = traditional;
  r.dims = head_dim;
  const json* rs = io::get_object_or_null(cfg, "rope_scaling", file);
  if (!rs) return r;
  const std::string where = file + ": rope_scaling";
  std::string type = io::get_string_or(*rs, "type", "", where);
  if (type.empty()) type = io::get_string_or(*rs, "rope_type", "default", where);
  if (type == "default") return r;
  if (type == "deepseek_yarn") type = "yarn";  // mlx-lm's initialize_rope: the same YarnRoPE
  if (type == "linear" || type == "dynamic" || type == "yarn") {
    r.kind = type == "linear" ? RopeKind::kLinear : type == "dynamic" ? RopeKind::kDynamic : RopeKind::kYarn;
    r.factor = io::get_double(*rs, "factor", where);
    r.original_max_position = get_size_or(*rs, "original_max_position_embeddings", 4096, limits::kMaxPosition, where);
    if (r.kind == RopeKind::kYarn) {  // YarnRoPE's keyword defaults
      r.beta_fast = io::get_double_or(*rs, "beta_fast", 32.0, where);
      r.beta_slow = io::get_double_or(*rs, "beta_slow", 1.0, where);
      r.mscale = io::get_double_or(*rs, "mscale", 1.0, where);
      r.mscale_all_dim = io::get_double_or(*rs, "mscale_all_dim", 0.0, where);
      if (r.original_max_position <= 0 || !(r.beta_fast > 0) || !(r.beta_slow > 0))
        fail(where, ": yarn needs original_max_position_embeddings > 0 and positive beta_fast "
             "and beta_slow");
      if (!(r.theta > 1.0))
        fail(file, ": field 'rope_theta' must be above 1 for yarn scaling, got ", r.theta);
      // YarnRoPE divides by 0.1 * m * ln(factor) + 1 for m = mscale_all_dim and multiplies by
      // it for m = mscale: both must stay positive and finite.
      for (auto [name, m] : {std::pair<const char*, double>{"mscale", r.mscale},
                             {"mscale_all_dim", r.mscale_all_dim}}) {
        const double term = r.factor > 1.0 ? 0.1 * m * std::log(r.factor) + 1.0 : 1.0;
        if (!std::isfinite(m) || !(term > 0.0))
          fail(where, ": field '", name, "' = ", m, " gives a non-positive yarn mscale (0.1 * ",
               name, " * ln(factor) + 1 = ", term, ")");
      }
    }
    if (r.kind == RopeKind::kDynamic && max_position <= 0)
      fail(file, ": dynamic rope scaling needs a positive max_position_embeddings, got ",
           max_position);
  } else if (type == "llama3") {
    r.kind = RopeKind::kLlama3;
    r.factor = io::get_double(*rs, "factor", where);
    r.low_freq_factor = io::get_double_or(*rs, "low_freq_factor", 1.0, where);
    r.high_freq_factor = io::get_double_or(*rs, "high_freq_factor", 4.0, where);
    r.original_max_position = get_size_or(*rs, "original_max_position_embeddings", 8192, limits::kMaxPosition, where);
    // Equal factors (Llama-4 Scout: 1.0 / 1.0) leave no medium-frequency band; only
    // high < low is meaningless.
    if (r.high_freq_factor < r.low_freq_factor)
      fail(where, ": high_freq_factor (", r.high_freq_factor, ") is below low_freq_factor (",
           r.low_freq_factor, ")");
  } else if (type == "longrope" || type == "su") {
    r.kind = RopeKind::kLongRope;
    r.short_factor = io::get_double_array(*rs, "short_factor", where);
    r.long_factor = io::get_double_array(*rs, "long_factor", where);
    r.short_mscale = io::get_double_or(*rs, "short_mscale", 0.0, where);
    r.long_mscale = io::get_double_or(*rs, "long_mscale", 0.0, where);
    r.original_max_position =
        io::has_field(*rs, "original_max_position_embeddings")
            ? get_size(*rs, "original_max_position_embeddings", limits::kMaxPosition, where)
            : get_size(cfg, "original_max_position_embeddings", limits::kMaxPosition, file);
    if (r.original_max_position <= 0)
      fail(file, ": original_max_position_embeddings must be positive");
    // As mlx-lm's SuScaledRoPE: long_mscale, else derived from the context extension factor.
    const double factor = double(max_position) / double(r.original_max_position);
    r.input_scale = r.long_mscale != 0.0 ? r.long_mscale
                    : factor <= 1.0      ? 1.0
                                         : std::sqrt(1.0 + std::log(factor) /
                                                               std::log(double(r.original_max_position)));
  } else {
    fail(where, ": unsupported rope type '", type,
         "' (supported: default, linear, llama3, longrope, su, yarn, dynamic)");
  }
  if (r.kind != RopeKind::kLongRope && !(r.factor > 0))
    fail(where, ": field 'factor' must be positive, got ", r.factor);
  return r;
}

std::vector<int64_t> parse_eos(const json& cfg, const std::string& file) {
  if (!io::has_field(cfg, "eos_token_id")) return {};
  const json& v = cfg.at("eos_token_id");
  if (v.is_array()) return io::get_int_array(cfg, "eos_token_id", file);
  return {io::get_int(cfg, "eos_token_id", file)};
}

ModelConfig begin_config(const char* family, const json& cfg, const std::string& file) {
  ModelConfig c;
  c.family = family;
  c.model_type = io::get_string(cfg, "model_type", file);
  c.source = file;
  return c;
}

void set_llama_model_names(ModelConfig& c, const json& cfg, const std::string& file) {
  c.embed_name = "model.embed_tokens";
  c.final_norm_name = "model.norm";
  c.lm_head_name = c.tie_word_embeddings ? "" : "lm_head";
  c.eos_token_ids = parse_eos(cfg, file);
  c.bos_token_id = io::get_int_or(cfg, "bos_token_id", -1, file);
}

void set_llama_attention_names(LayerModules& n, const std::string& p, bool qk_norm) {
  n.input_norm = p + ".input_layernorm";
  n.post_norm = p + ".post_attention_layernorm";
  n.q = p + ".self_attn.q_proj";
  n.k = p + ".self_attn.k_proj";
  n.v = p + ".self_attn.v_proj";
  n.o = p + ".self_attn.o_proj";
  if (qk_norm) {
    n.q_norm = p + ".self_attn.q_norm";
    n.k_norm = p + ".self_attn.k_norm";
  }
}

void set_switch_mlp_names(LayerModules& n, const std::string& moe, const std::string& router,
                          const char* g, const char* u, const char* d, const char* stacked) {
  n.router = moe + "." + router;
  n.experts_gate = moe + "." + stacked + ".gate_proj";
  n.experts_up = moe + "." + stacked + ".up_proj";
  n.experts_down = moe + "." + stacked + ".down_proj";
  n.hf_expert_gate = moe + ".experts.{e}." + g;
  n.hf_expert_up = moe + ".experts.{e}." + u;
  n.hf_expert_down = moe + ".experts.{e}." + d;
}

void set_dense_mlp_names(LayerModules& n, const std::string& mlp) {
  n.dense_gate = mlp + ".gate_proj";
  n.dense_up = mlp + ".up_proj";
  n.dense_down = mlp + ".down_proj";
}

void set_shared_mlp_names(LayerModules& n, const std::string& mlp) {
  n.shared_gate = mlp + ".gate_proj";
  n.shared_up = mlp + ".up_proj";
  n.shared_down = mlp + ".down_proj";
}

bool drops_tied_lm_head(const ModelConfig& c, std::string_view tensor) {
  return c.tie_word_embeddings && tensor == "lm_head.weight";
}

void check_expert_groups(const ModelConfig& c, const std::string& f, const char* experts_field) {
  const MoeParams& m = c.moe;
  const int64_t n_group = m.router.n_group, topk_group = m.router.topk_group;
  const int64_t least = m.router.group_score_top;  // the experts a group's score adds up
  if (n_group < 1 || m.num_experts % n_group != 0 || topk_group > n_group ||
      (n_group > 1 && m.num_experts / n_group < least))
    fail(f, ": n_group = ", n_group, " and topk_group = ", topk_group, " must split ",
         experts_field, " = ", m.num_experts, " into equal groups of at least ", least,
         " with topk_group <= n_group");
  if (m.top_k > topk_group * (m.num_experts / n_group))
    fail(f, ": num_experts_per_tok = ", m.top_k, " exceeds the experts of the topk_group",
         " groups kept");
}

void set_noaux_tc_routing(ModelConfig& c, const json& cfg, const std::string& f) {
  check_expert_groups(c, f, "n_routed_experts");
  const double scaling = io::get_double(cfg, "routed_scaling_factor", f);
  if (!std::isfinite(scaling)) fail(f, ": field 'routed_scaling_factor' must be finite");
  // The caller set n_group and topk_group; the correction bias is a tensor, bound with the
  // weights.
  const moe::RouterConfig groups = c.moe.router;
  c.moe.router = moe::group_limited_sigmoid_router(
      c.moe.num_experts, c.moe.top_k, io::get_bool(cfg, "norm_topk_prob", f), float(scaling), {},
      groups.n_group, groups.topk_group);
  c.moe.use_expert_bias = true;
  c.moe.router_unquantized = true;
}

LayerPlan llama_layer_plan(const ModelConfig& c, FfnKind ffn, int64_t dff) {
  LayerPlan l;
  l.mixer = MixerKind::kAttention;
  l.use_rope = c.rope.kind != RopeKind::kNone;
  l.qk_norm = c.qk_norm != QkNormKind::kNone;
  l.ffn = ffn;
  l.ffn_dff = dff;
  return l;
}

json base_preset_config(const ModelPreset& p, const char* architecture) {
  json j;
  j["architectures"] = json::array({architecture});
  j["model_type"] = p.model_type;
  j["hidden_size"] = p.hidden;
  j["num_hidden_layers"] = p.layers;
  j["num_attention_heads"] = p.heads;
  j["num_key_value_heads"] = p.kv_heads;
  j["vocab_size"] = p.vocab;
  j["max_position_embeddings"] = p.max_position;
  j["torch_dtype"] = "bfloat16";
  j["bos_token_id"] = nullptr;
  j["eos_token_id"] = synthetic_eos_id(p.vocab);
  return j;
}

std::vector<double> synthetic_rope_factors(int64_t half, double lo, double hi) {
  std::vector<double> f(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    const double t = half > 1 ? double(i) / double(half - 1) : 0.0;
    f[size_t(i)] = lo + (hi - lo) * t * t;  // slow start, steep end, as trained factors are
  }
  return f;
}

double default_attn_scale(int64_t head_dim) { return 1.0 / std::sqrt(double(head_dim)); }

}  // namespace moex::model::arch
