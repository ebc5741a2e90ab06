// ModelConfig helpers: enum names, structural validation and per-layer descriptions.
#include "model/model_config.h"

#include "core/error.h"

namespace moex::model {

int64_t ModelConfig::num_moe_layers() const {
  int64_t n = 0;
  for (const LayerPlan& l : layers) n += l.ffn == FfnKind::kMoe;
  return n;
}

int64_t ModelConfig::layer_head_dim(int64_t l) const {
  const int64_t d = layers.at(size_t(l)).head_dim;
  return d > 0 ? d : head_dim;
}

int64_t ModelConfig::layer_kv_heads(int64_t l) const {
  const int64_t h = layers.at(size_t(l)).kv_heads;
  return h > 0 ? h : kv_heads;
}

const RopeParams& ModelConfig::layer_rope(int64_t l) const {
  const LayerPlan& p = layers.at(size_t(l));
  return p.rope ? *p.rope : rope;
}

const char* norm_kind_name(NormKind k) {
  return k == NormKind::kRmsNorm ? "rms_norm" : "layer_norm";
}

const char* qk_norm_kind_name(QkNormKind k) {
  switch (k) {
    case QkNormKind::kNone: return "none";
    case QkNormKind::kPerHead: return "per_head";
    case QkNormKind::kFullWidth: return "full_width";
    case QkNormKind::kPerHeadNoWeight: return "per_head_no_weight";
    case QkNormKind::kPerHeadAfterRope: return "per_head_after_rope";
  }
  return "?";
}

const char* rope_kind_name(RopeKind k) {
  switch (k) {
    case RopeKind::kNone: return "none";
    case RopeKind::kDefault: return "default";
    case RopeKind::kLinear: return "linear";
    case RopeKind::kLlama3: return "llama3";
    case RopeKind::kLongRope: return "longrope";
    case RopeKind::kYarn: return "yarn";
    case RopeKind::kDynamic: return "dynamic";
    case RopeKind::kProportional: return "proportional";
  }
  return "?";
}

const char* expert_activation_name(ExpertActivation a) {
  switch (a) {
    case ExpertActivation::kSwiGLU: return "swiglu";
    case ExpertActivation::kSwiGLUOai: return "swiglu_oai";
    case ExpertActivation::kGeGLU: return "geglu";
    case ExpertActivation::kReLU2: return "relu2";
  }
  return "?";
}

const char* mixer_kind_name(MixerKind k) {
  switch (k) {
    case MixerKind::kAttention: return "attention";
    case MixerKind::kShortConv: return "short_conv";
    case MixerKind::kGatedDeltaNet: return "gated_deltanet";
    case MixerKind::kMamba2: return "mamba2";
    case MixerKind::kNone: return "none";
    case MixerKind::kMla: return "mla";
  }
  return "?";
}

const char* ffn_kind_name(FfnKind k) {
  switch (k) {
    case FfnKind::kDense: return "dense";
    case FfnKind::kMoe: return "moe";
    case FfnKind::kNone: return "none";
  }
  return "?";
}

namespace {

void require_positive(const ModelConfig& c, const char* field, int64_t v) {
  if (v <= 0) fail(c.source, ": field '", field, "' must be positive, got ", v);
}

// v in [1, hi]: every size field, so that the products formed from them stay far from
// int64_t overflow (see model::limits).
void require_size(const ModelConfig& c, const char* field, int64_t v, int64_t hi) {
  if (v < 1 || v > hi)
    fail(c.source, ": field '", field, "' = ", v, " is out of range; expected an integer in [1, ",
         hi, "]");
}

void require_token_id(const ModelConfig& c, const char* field, int64_t id) {
  if (id < 0 || id >= c.vocab)
    fail(c.source, ": field '", field, "' = ", id, " is not a token id (vocab_size ", c.vocab, ")");
}

void require_name(const ModelConfig& c, int64_t layer, const char* what, const std::string& n) {
  if (n.empty()) fail(c.source, ": layer ", layer, " has no tensor name for ", what);
}

}  // namespace

void validate_model_config(const ModelConfig& c) {
  require_size(c, "hidden_size", c.hidden, limits::kMaxHidden);
  require_size(c, "vocab_size", c.vocab, limits::kMaxVocab);
  require_size(c, "num_hidden_layers", c.num_layers, limits::kMaxLayers);
  require_size(c, "max_position_embeddings", c.max_position, limits::kMaxPosition);
  require_size(c, "num_attention_heads", c.heads, limits::kMaxHeads);
  require_size(c, "num_key_value_heads", c.kv_heads, limits::kMaxHeads);
  require_size(c, "head_dim", c.head_dim, limits::kMaxHeadDim);
  for (int64_t id : c.eos_token_ids) require_token_id(c, "eos_token_id", id);
  if (c.bos_token_id != -1) require_token_id(c, "bos_token_id", c.bos_token_id);
  if (c.heads % c.kv_heads != 0)
    fail(c.source, ": num_attention_heads (", c.heads, ") is not a multiple of num_key_value_heads (",
         c.kv_heads, ")");
  if (c.head_dim % 2 != 0) fail(c.source, ": head_dim must be even for RoPE, got ", c.head_dim);
  if (!(c.norm_eps > 0)) fail(c.source, ": the norm epsilon must be positive, got ", c.norm_eps);
  if (int64_t(c.layers.size()) != c.num_layers)
    fail(c.source, ": layer plan has ", c.layers.size(), " entries for ", c.num_layers, " layers");
  if (c.embed_name.empty() || c.final_norm_name.empty())
    fail(c.source, ": family produced no embedding / final norm tensor name");
  if (!c.tie_word_embeddings && c.lm_head_name.empty())
    fail(c.source, ": untied embeddings need an lm_head tensor name");
  if (c.rope.kind == RopeKind::kLongRope) {
    const size_t half = size_t(c.head_dim / 2);
    if (c.rope.long_factor.size() != half || c.rope.short_factor.size() != half)
      fail(c.source, ": rope_scaling short_factor/long_factor must have head_dim/2 = ", half,
           " entries, got ", c.rope.short_factor.size(), "/", c.rope.long_factor.size());
  }
  if (c.dense_dff != 0) require_size(c, "dense intermediate size", c.dense_dff, limits::kMaxDff);
  if (c.moe.shared_dff != 0)
    require_size(c, "shared expert intermediate size", c.moe.shared_dff, limits::kMaxDff);
  if (c.conv_kernel != 0) require_size(c, "conv_L_cache", c.conv_kernel, limits::kMaxConvKernel);
  if (c.attention_chunk_size != 0)
    require_size(c, "attention_chunk_size", c.attention_chunk_size, limits::kMaxPosition);
  const bool any_moe = c.num_moe_layers() > 0;
  if (any_moe) {
    require_size(c, "num_experts", c.moe.num_experts, limits::kMaxExperts);
    require_size(c, "num_experts_per_tok", c.moe.top_k, limits::kMaxExperts);
    require_size(c, "moe_intermediate_size", c.moe.expert_dff, limits::kMaxDff);
    if (c.moe.top_k > c.moe.num_experts)
      fail(c.source, ": num_experts_per_tok (", c.moe.top_k, ") exceeds the number of experts (",
           c.moe.num_experts, ")");
  }
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const LayerPlan& l = c.layers[size_t(i)];
    const LayerModules& n = l.names;
    if (l.mixer == MixerKind::kNone && l.ffn == FfnKind::kNone)
      fail(c.source, ": layer ", i, " has neither a mixer nor an FFN");
    if (l.mixer != MixerKind::kNone) require_name(c, i, "input norm", n.input_norm);
    if (l.ffn != FfnKind::kNone) require_name(c, i, "post-mixer norm", n.post_norm);
    if (l.mixer == MixerKind::kAttention) {
      require_name(c, i, "q_proj (or a fused qkv)", n.q.empty() ? n.qkv : n.q);
      if (!n.qkv.empty() && (c.q_bias != c.k_bias || c.q_bias != c.v_bias))
        fail(c.source, ": a fused qkv projection has one bias for q, k and v, or none");
      require_name(c, i, "o_proj", n.o);
      if (c.attention_sinks) require_name(c, i, "attention sinks", n.sinks);
      if (l.head_dim != 0) require_size(c, "layer head_dim", l.head_dim, limits::kMaxHeadDim);
      if (l.kv_heads != 0) require_size(c, "layer key/value heads", l.kv_heads, limits::kMaxHeads);
      if (c.heads % c.layer_kv_heads(i) != 0 || c.layer_head_dim(i) % 2 != 0)
        fail(c.source, ": layer ", i, ": num_attention_heads (", c.heads,
             ") must be a multiple of its key/value heads (", c.layer_kv_heads(i),
             ") and its head_dim (", c.layer_head_dim(i), ") even");
      if (!l.values_from_keys && n.qkv.empty()) require_name(c, i, "v_proj", n.v);
      if (l.values_from_keys && !n.v.empty())
        fail(c.source, ": layer ", i, " takes its values from k_proj but names a v_proj");
      if (l.sliding_window < 0 || l.sliding_window > limits::kMaxPosition)
        fail(c.source, ": layer ", i, " has sliding window ", l.sliding_window, "; expected [0, ",
             limits::kMaxPosition, "]");
    } else if (l.mixer == MixerKind::kMla) {
      const MlaParams& m = c.mla;
      if (m.q_lora_rank != 0) require_size(c, "q_lora_rank", m.q_lora_rank, limits::kMaxHidden);
      require_size(c, "kv_lora_rank", m.kv_lora_rank, limits::kMaxHidden);
      require_size(c, "qk_nope_head_dim", m.nope_dim, limits::kMaxHeadDim);
      require_size(c, "qk_rope_head_dim", m.rope_dim, limits::kMaxHeadDim);
      require_size(c, "v_head_dim", m.v_head_dim, limits::kMaxHeadDim);
      if (m.rope_dim % 2 != 0)
        fail(c.source, ": field 'qk_rope_head_dim' must be even for RoPE, got ", m.rope_dim);
      if (m.q_lora_rank > 0) {
        require_name(c, i, "q_a_proj", n.mla_q_a);
        require_name(c, i, "q_a_layernorm", n.mla_q_a_norm);
        require_name(c, i, "q_b_proj", n.mla_q_b);
      } else {
        require_name(c, i, "q_proj", n.q);
      }
      require_name(c, i, "kv_a_proj_with_mqa", n.mla_kv_a);
      require_name(c, i, "kv_a_layernorm", n.mla_kv_a_norm);
      if (n.mla_embed_q.empty() && n.mla_unembed_out.empty()) {  // one kv_b_proj Linear
        require_name(c, i, "kv_b_proj", n.mla_kv_b);
      } else {
        require_name(c, i, "embed_q", n.mla_embed_q);
        require_name(c, i, "unembed_out", n.mla_unembed_out);
      }
      require_name(c, i, "o_proj", n.o);
    } else if (l.mixer == MixerKind::kShortConv) {
      require_positive(c, "conv_L_cache", c.conv_kernel);
      require_name(c, i, "conv in_proj", n.conv_in);
      require_name(c, i, "conv", n.conv);
    } else if (l.mixer == MixerKind::kMamba2) {
      const Mamba2Params& m = c.mamba;
      require_size(c, "mamba_num_heads", m.heads, limits::kMaxHeads);
      require_size(c, "mamba_head_dim", m.head_dim, limits::kMaxHeadDim);
      require_size(c, "ssm_state_size", m.state_dim, limits::kMaxHeadDim);
      require_size(c, "n_groups", m.groups, limits::kMaxHeads);
      require_size(c, "conv_kernel", m.conv_kernel, limits::kMaxConvKernel);
      if (m.heads % m.groups != 0)
        fail(c.source, ": mamba_num_heads (", m.heads, ") is not a multiple of n_groups (",
             m.groups, ")");
      if (!(m.dt_min <= m.dt_max))
        fail(c.source, ": time_step_limit [", m.dt_min, ", ", m.dt_max, "] is not a range");
      for (const auto& [what, name] :
           {std::pair{"mixer in_proj", &n.mamba_in}, {"mixer conv1d", &n.mamba_conv},
            {"mixer dt_bias", &n.mamba_dt_bias}, {"mixer A_log", &n.mamba_a_log},
            {"mixer D", &n.mamba_d}, {"mixer norm", &n.mamba_norm},
            {"mixer out_proj", &n.mamba_out}})
        require_name(c, i, what, *name);
    } else if (l.mixer == MixerKind::kGatedDeltaNet) {
      const GatedDeltaParams& g = c.gdn;
      require_size(c, "linear_num_key_heads", g.k_heads, limits::kMaxHeads);
      require_size(c, "linear_num_value_heads", g.v_heads, limits::kMaxHeads);
      require_size(c, "linear_key_head_dim", g.k_head_dim, limits::kMaxHeadDim);
      require_size(c, "linear_value_head_dim", g.v_head_dim, limits::kMaxHeadDim);
      require_size(c, "linear_conv_kernel_dim", g.conv_kernel, limits::kMaxConvKernel);
      if (g.v_heads % g.k_heads != 0)
        fail(c.source, ": linear_num_value_heads (", g.v_heads,
             ") is not a multiple of linear_num_key_heads (", g.k_heads, ")");
      if (n.gdn_qkvz.empty() == n.gdn_qkv.empty())
        fail(c.source, ": layer ", i, " needs either in_proj_qkvz or in_proj_qkv names");
      require_name(c, i, "linear_attn conv1d", n.gdn_conv);
      require_name(c, i, "linear_attn A_log", n.gdn_a_log);
      require_name(c, i, "linear_attn dt_bias", n.gdn_dt_bias);
      require_name(c, i, "linear_attn norm", n.gdn_norm);
      require_name(c, i, "linear_attn out_proj", n.gdn_out);
    }
    if (l.ffn == FfnKind::kNone) continue;
    if (l.ffn_dff < 1 || l.ffn_dff > limits::kMaxDff)
      fail(c.source, ": layer ", i, " has intermediate size ", l.ffn_dff, "; expected [1, ",
           limits::kMaxDff, "]");
    if (l.ffn == FfnKind::kDense) {
      if (c.dense_activation == ExpertActivation::kReLU2)
        require_name(c, i, "dense up_proj", n.dense_up);
      else
        require_name(c, i, "dense gate_proj", n.dense_gate);
    } else {
      require_name(c, i, "router", n.router);
      require_name(c, i, "stacked experts",
                   c.moe.activation == ExpertActivation::kReLU2 ? n.experts_up : n.experts_gate);
      if (c.moe.shared_dff > 0)
        require_name(c, i, "shared expert",
                     c.moe.shared_activation == ExpertActivation::kReLU2 ? n.shared_up
                                                                         : n.shared_gate);
      if (l.parallel_dense_dff != 0) {
        require_size(c, "parallel dense intermediate size", l.parallel_dense_dff, limits::kMaxDff);
        require_name(c, i, "parallel dense gate_proj", n.dense_gate);
      }
    }
  }
}

int64_t kv_cache_bytes_per_token(const ModelConfig& c, DType kv) {
  int64_t n = 0;
  for (int64_t i = 0; i < c.num_layers; ++i)
    if (c.layers[size_t(i)].mixer == MixerKind::kAttention)
      n += 2 * c.layer_kv_dim(i) * int64_t(dtype_size(kv));
    else if (c.layers[size_t(i)].mixer == MixerKind::kMla)
      n += c.mla.cache_dim() * int64_t(sizeof(float));
  return n;
}

int64_t mla_full_kv_bytes_per_token(const ModelConfig& c) {
  int64_t n = 0;
  for (const LayerPlan& l : c.layers)
    if (l.mixer == MixerKind::kMla)
      n += c.heads * (c.mla.q_head_dim() + c.mla.v_head_dim) * int64_t(sizeof(float));
  return n;
}

int64_t recurrent_state_bytes(const ModelConfig& c) {
  int64_t n = 0;
  const GatedDeltaParams& g = c.gdn;
  for (const LayerPlan& l : c.layers) {
    if (l.mixer == MixerKind::kShortConv) n += (c.conv_kernel - 1) * c.hidden;
    if (l.mixer == MixerKind::kGatedDeltaNet)
      n += (g.conv_kernel - 1) * g.conv_dim() + g.v_heads * g.v_head_dim * g.k_head_dim;
    if (l.mixer == MixerKind::kMamba2)
      n += (c.mamba.conv_kernel - 1) * c.mamba.conv_dim() + c.mamba.inner() * c.mamba.state_dim;
  }
  return n * int64_t(sizeof(float));
}

std::string describe_layer(const ModelConfig& c, int64_t layer) {
  const LayerPlan& l = c.layers.at(size_t(layer));
  std::string s = str_cat("L", layer, ": ");
  if (l.mixer == MixerKind::kAttention) {
    s += str_cat("attention(", l.use_rope ? rope_kind_name(c.layer_rope(layer).kind) : "nope",
                 l.head_dim || l.kv_heads
                     ? str_cat(", ", c.layer_kv_heads(layer), "x", c.layer_head_dim(layer), " kv")
                     : std::string(),
                 l.values_from_keys ? ", v=k" : "",
                 l.chunked_attention ? str_cat(", chunk ", c.attention_chunk_size) : "",
                 l.qk_norm ? str_cat(", qk_norm ", qk_norm_kind_name(c.qk_norm)) : "",
                 l.attn_temperature ? ", temperature tuning" : "",
                 l.sliding_window > 0 ? str_cat(", window ", l.sliding_window) : "",
                 c.attention_sinks ? ", sinks" : "",
                 l.attn_output_gate ? ", output gate" : "", ")");
  } else if (l.mixer == MixerKind::kMla) {
    const MlaParams& m = c.mla;
    s += str_cat("mla(", rope_kind_name(c.layer_rope(layer).kind), ", ",
                 m.q_lora_rank > 0 ? str_cat("q_lora ", m.q_lora_rank) : std::string("q_proj"),
                 ", kv_lora ", m.kv_lora_rank, ", ", c.heads, " heads nope ", m.nope_dim,
                 " + rope ", m.rope_dim, ", v ", m.v_head_dim, "; cache ", m.cache_dim(),
                 " floats/token)");
  } else if (l.mixer == MixerKind::kShortConv) {
    s += str_cat("short_conv(L=", c.conv_kernel, ")");
  } else if (l.mixer == MixerKind::kGatedDeltaNet) {
    const GatedDeltaParams& g = c.gdn;
    s += str_cat("gated_deltanet(", g.k_heads, "x", g.k_head_dim, " k, ", g.v_heads, "x",
                 g.v_head_dim, " v, conv L=", g.conv_kernel, ")");
  } else if (l.mixer == MixerKind::kMamba2) {
    const Mamba2Params& m = c.mamba;
    s += str_cat("mamba2(", m.heads, "x", m.head_dim, " heads, state ", m.state_dim, ", ",
                 m.groups, " groups, conv L=", m.conv_kernel, ")");
  }
  // A layer with one of the two only (Nemotron-H's blocks) names just that one.
  const char* join = l.mixer == MixerKind::kNone ? "" : " + ";
  if (l.ffn == FfnKind::kNone) {
  } else if (l.ffn == FfnKind::kDense) {
    s += str_cat(join, "dense ", l.ffn_dff,
                 c.dense_activation != ExpertActivation::kSwiGLU
                     ? str_cat(" ", expert_activation_name(c.dense_activation))
                     : std::string());
  } else {
    if (l.parallel_dense_dff > 0) s += str_cat(" + dense ", l.parallel_dense_dff);
    s += str_cat(join, "moe ", c.moe.num_experts, "x", l.ffn_dff, " top-", c.moe.top_k, " ",
                 moe::router_summary(c.moe.router),
                 c.moe.activation != ExpertActivation::kSwiGLU
                     ? str_cat(" ", expert_activation_name(c.moe.activation))
                     : std::string());
    if (c.moe.shared_dff > 0)
      s += str_cat(" + shared ", c.moe.shared_dff, c.moe.shared_expert_gated ? " (gated)" : "",
                   c.moe.shared_activation != ExpertActivation::kSwiGLU
                       ? str_cat(" ", expert_activation_name(c.moe.shared_activation))
                       : std::string());
  }
  return s;
}

}  // namespace moex::model
