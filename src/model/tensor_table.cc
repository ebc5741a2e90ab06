// Builds the module table of a ModelConfig from its per-layer names and dims, and expands
// modules into checkpoint tensors under a quantization decision.
#include "model/tensor_table.h"

#include "core/error.h"
#include "quant/format.h"

namespace moex::model {

const char* module_kind_name(ModuleKind k) {
  switch (k) {
    case ModuleKind::kLinear: return "linear";
    case ModuleKind::kEmbedding: return "embedding";
    case ModuleKind::kNorm: return "norm";
    case ModuleKind::kLayerNorm: return "layer_norm";
    case ModuleKind::kConv1d: return "conv1d";
    case ModuleKind::kTensor: return "tensor";
  }
  return "?";
}

const char* tensor_role_name(TensorRole r) {
  switch (r) {
    case TensorRole::kEmbedding: return "embedding";
    case TensorRole::kLmHead: return "lm_head";
    case TensorRole::kNorm: return "norm";
    case TensorRole::kAttention: return "attention";
    case TensorRole::kShortConv: return "short_conv";
    case TensorRole::kLinearAttention: return "linear_attention";
    case TensorRole::kStateSpace: return "state_space";
    case TensorRole::kRouter: return "router";
    case TensorRole::kRouterBias: return "router_bias";
    case TensorRole::kExperts: return "experts";
    case TensorRole::kSharedExpert: return "shared_expert";
    case TensorRole::kSharedExpertGate: return "shared_expert_gate";
    case TensorRole::kDenseFfn: return "dense_ffn";
  }
  return "?";
}

const char* tensor_part_name(TensorPart p) {
  switch (p) {
    case TensorPart::kWeight: return "weight";
    case TensorPart::kScales: return "scales";
    case TensorPart::kBiases: return "biases";
    case TensorPart::kBias: return "bias";
  }
  return "?";
}

int64_t ModuleSpec::parameter_count() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (bias || kind == ModuleKind::kLayerNorm) n += kind == ModuleKind::kLinear ? n / in_dim() : shape[0];
  return n;
}

int64_t TensorRecord::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t TensorRecord::bytes() const { return numel() * int64_t(dtype_size(dtype)); }

namespace {

class TableBuilder {
 public:
  explicit TableBuilder(const ModelConfig& c) : c_(c) {}

  void linear(Slot slot, const std::string& path, TensorRole role, int64_t layer,
              std::vector<int64_t> shape, bool bias, ExpertProj proj = ExpertProj::kNone,
              const std::string& hf = "", bool residual_out = false) {
    if (path.empty()) return;
    out_.push_back({path, ModuleKind::kLinear, role, layer, std::move(shape), bias, false, proj, hf,
                    residual_out, slot});
  }
  void output(Slot slot, const std::string& path, TensorRole role, int64_t layer,
              std::vector<int64_t> shape, bool bias) {
    linear(slot, path, role, layer, std::move(shape), bias, ExpertProj::kNone, "", true);
  }
  void norm(Slot slot, const std::string& path, TensorRole role, int64_t layer, int64_t dim) {
    if (path.empty()) return;
    const ModuleKind k = c_.norm == NormKind::kLayerNorm ? ModuleKind::kLayerNorm : ModuleKind::kNorm;
    push({path, k, role, layer, {dim}}, slot);
  }
  void rms_norm(Slot slot, const std::string& path, TensorRole role, int64_t layer, int64_t dim) {
    if (path.empty()) return;
    push({path, ModuleKind::kNorm, role, layer, {dim}}, slot);
  }
  void push(ModuleSpec m, Slot slot) {
    m.slot = slot;
    out_.push_back(std::move(m));
  }
  std::vector<ModuleSpec> take() { return std::move(out_); }
  ModuleSpec& last() { return out_.back(); }

 private:
  const ModelConfig& c_;
  std::vector<ModuleSpec> out_;
};

void add_attention(TableBuilder& b, const ModelConfig& c, const LayerPlan& l, int64_t i) {
  const LayerModules& n = l.names;
  const int64_t H = c.hidden, q = c.layer_q_dim(i), kv = c.layer_kv_dim(i);
  // A gated layer's q_proj also gives the output gate: [heads][2 * head_dim] rows.
  b.linear(Slot::kQ, n.q, TensorRole::kAttention, i, {l.attn_output_gate ? 2 * q : q, H},
           c.q_bias);
  b.linear(Slot::kK, n.k, TensorRole::kAttention, i, {kv, H}, c.k_bias);
  b.linear(Slot::kV, n.v, TensorRole::kAttention, i, {kv, H}, c.v_bias);
  b.linear(Slot::kQkv, n.qkv, TensorRole::kAttention, i, {q + 2 * kv, H}, c.q_bias);
  b.output(Slot::kO, n.o, TensorRole::kAttention, i, {H, q}, c.o_bias);
  if (c.attention_sinks)
    b.push({n.sinks, ModuleKind::kTensor, TensorRole::kAttention, i, {c.heads}}, Slot::kSinks);
  if (c.qk_norm == QkNormKind::kPerHead || c.qk_norm == QkNormKind::kPerHeadAfterRope) {
    b.rms_norm(Slot::kQNorm, n.q_norm, TensorRole::kAttention, i, c.layer_head_dim(i));
    b.rms_norm(Slot::kKNorm, n.k_norm, TensorRole::kAttention, i, c.layer_head_dim(i));
  } else if (c.qk_norm == QkNormKind::kFullWidth) {
    b.rms_norm(Slot::kQNorm, n.q_norm, TensorRole::kAttention, i, q);
    b.rms_norm(Slot::kKNorm, n.k_norm, TensorRole::kAttention, i, kv);
  }
  b.norm(Slot::kAttnOutNorm, n.attn_out_norm, TensorRole::kNorm, i, H);
}

void add_short_conv(TableBuilder& b, const ModelConfig& c, const LayerPlan& l, int64_t i) {
  const LayerModules& n = l.names;
  const int64_t H = c.hidden;
  b.linear(Slot::kConvIn, n.conv_in, TensorRole::kShortConv, i, {3 * H, H}, c.conv_bias);
  b.push({n.conv, ModuleKind::kConv1d, TensorRole::kShortConv, i, {H, c.conv_kernel, 1}, c.conv_bias},
         Slot::kConv);
  b.output(Slot::kConvOut, n.conv_out, TensorRole::kShortConv, i, {H, H}, c.conv_bias);
}

void add_gated_delta(TableBuilder& b, const ModelConfig& c, const LayerPlan& l, int64_t i) {
  const LayerModules& n = l.names;
  const GatedDeltaParams& g = c.gdn;
  const int64_t H = c.hidden, kd = g.key_dim(), vd = g.value_dim(), hv = g.v_heads;
  const TensorRole r = TensorRole::kLinearAttention;
  b.linear(Slot::kGdnQkvz, n.gdn_qkvz, r, i, {2 * kd + 2 * vd, H}, false);
  b.linear(Slot::kGdnBa, n.gdn_ba, r, i, {2 * hv, H}, false);
  b.linear(Slot::kGdnQkv, n.gdn_qkv, r, i, {2 * kd + vd, H}, false);
  b.linear(Slot::kGdnZ, n.gdn_z, r, i, {vd, H}, false);
  b.linear(Slot::kGdnB, n.gdn_b, r, i, {hv, H}, false);
  b.linear(Slot::kGdnA, n.gdn_a, r, i, {hv, H}, false);
  b.push({n.gdn_conv, ModuleKind::kConv1d, r, i, {g.conv_dim(), g.conv_kernel, 1}, false},
         Slot::kGdnConv);
  b.push({n.gdn_dt_bias, ModuleKind::kTensor, r, i, {hv}}, Slot::kGdnDtBias);
  b.push({n.gdn_a_log, ModuleKind::kTensor, r, i, {hv}}, Slot::kGdnALog);
  b.rms_norm(Slot::kGdnNorm, n.gdn_norm, r, i, g.v_head_dim);
  b.output(Slot::kGdnOut, n.gdn_out, r, i, {H, vd}, false);
}

// A_log is kept in float32 whatever the model dtype (mlx-lm's nemotron_h cast_predicate).
void add_mamba2(TableBuilder& b, const ModelConfig& c, const LayerPlan& l, int64_t i) {
  const LayerModules& n = l.names;
  const Mamba2Params& m = c.mamba;
  const int64_t H = c.hidden, hm = m.heads;
  const TensorRole r = TensorRole::kStateSpace;
  b.linear(Slot::kMambaIn, n.mamba_in, r, i, {m.in_proj_dim(), H}, m.proj_bias);
  b.push({n.mamba_conv, ModuleKind::kConv1d, r, i, {m.conv_dim(), m.conv_kernel, 1}, m.conv_bias},
         Slot::kMambaConv);
  b.push({n.mamba_dt_bias, ModuleKind::kTensor, r, i, {hm}}, Slot::kMambaDtBias);
  b.push({n.mamba_a_log, ModuleKind::kTensor, r, i, {hm}, false, true}, Slot::kMambaALog);
  b.push({n.mamba_d, ModuleKind::kTensor, r, i, {hm}}, Slot::kMambaD);
  b.rms_norm(Slot::kMambaNorm, n.mamba_norm, r, i, m.inner());
  b.output(Slot::kMambaOut, n.mamba_out, r, i, {H, m.inner()}, m.proj_bias);
}

void add_mla(TableBuilder& b, const ModelConfig& c, const LayerPlan& l, int64_t i) {
  const LayerModules& n = l.names;
  const MlaParams& m = c.mla;
  const int64_t H = c.hidden, q = c.heads * m.q_head_dim();
  const TensorRole r = TensorRole::kAttention;
  if (m.q_lora_rank > 0) {
    b.linear(Slot::kMlaQA, n.mla_q_a, r, i, {m.q_lora_rank, H}, c.q_bias);
    b.rms_norm(Slot::kMlaQANorm, n.mla_q_a_norm, r, i, m.q_lora_rank);
    b.linear(Slot::kMlaQB, n.mla_q_b, r, i, {q, m.q_lora_rank}, false);
  } else {
    b.linear(Slot::kQ, n.q, r, i, {q, H}, false);
  }
  b.linear(Slot::kMlaKvA, n.mla_kv_a, r, i, {m.cache_dim(), H}, c.k_bias);
  b.rms_norm(Slot::kMlaKvANorm, n.mla_kv_a_norm, r, i, m.kv_lora_rank);
  if (n.mla_embed_q.empty()) {  // kv_b_proj is the checkpoint's one Linear (deepseek_v2)
    b.linear(Slot::kMlaKvB, n.mla_kv_b, r, i,
             {c.heads * (m.nope_dim + m.v_head_dim), m.kv_lora_rank}, false);
  } else {
    // In the Hugging Face layout both come from kv_b_proj (hf_pattern; the checker and binder).
    b.linear(Slot::kMlaEmbedQ, n.mla_embed_q, r, i, {c.heads, m.kv_lora_rank, m.nope_dim}, false,
             ExpertProj::kNone, n.mla_kv_b);
    b.linear(Slot::kMlaUnembedOut, n.mla_unembed_out, r, i,
             {c.heads, m.v_head_dim, m.kv_lora_rank}, false, ExpertProj::kNone, n.mla_kv_b);
  }
  b.output(Slot::kO, n.o, r, i, {H, c.heads * m.v_head_dim}, c.o_bias);
}

void add_moe(TableBuilder& b, const ModelConfig& c, const LayerPlan& l, int64_t i) {
  const LayerModules& n = l.names;
  const int64_t H = c.hidden, E = c.moe.num_experts, F = l.ffn_dff, S = c.moe.shared_dff;
  const bool eb = c.moe.expert_linear_bias;
  b.linear(Slot::kRouter, n.router, TensorRole::kRouter, i, {E, H}, c.moe.router_bias);
  if (c.moe.router_unquantized && !n.router.empty()) b.last().float_only = true;
  if (!n.router_input_scale.empty())
    b.push({n.router_input_scale, ModuleKind::kTensor, TensorRole::kRouter, i, {H}},
           Slot::kRouterInputScale);
  if (!n.router_expert_scale.empty())
    b.push({n.router_expert_scale, ModuleKind::kTensor, TensorRole::kRouter, i, {E}},
           Slot::kRouterExpertScale);
  if (l.parallel_dense_dff > 0) {
    const int64_t D = l.parallel_dense_dff;
    b.linear(Slot::kDenseGate, n.dense_gate, TensorRole::kDenseFfn, i, {D, H}, false);
    b.linear(Slot::kDenseUp, n.dense_up, TensorRole::kDenseFfn, i, {D, H}, false);
    b.output(Slot::kDenseDown, n.dense_down, TensorRole::kDenseFfn, i, {H, D}, false);
    b.norm(Slot::kDenseOutNorm, n.dense_out_norm, TensorRole::kNorm, i, H);
  }
  b.norm(Slot::kExpertsInNorm, n.experts_in_norm, TensorRole::kNorm, i, H);
  b.norm(Slot::kExpertsOutNorm, n.experts_out_norm, TensorRole::kNorm, i, H);
  if (!n.expert_bias.empty())
    b.push({n.expert_bias, ModuleKind::kTensor, TensorRole::kRouterBias, i, {E}, false, true},
           Slot::kExpertBias);
  // Per-expert HF names ("{e}"), or the fused HF tensors (no "{e}") laid out as n.hf_fused says.
  const std::string& hf_gate = n.hf_expert_gate.empty() ? n.hf_experts_gate_up : n.hf_expert_gate;
  const std::string& hf_up = n.hf_expert_up.empty() ? n.hf_experts_gate_up : n.hf_expert_up;
  const std::string& hf_down = n.hf_expert_down.empty() ? n.hf_experts_down : n.hf_expert_down;
  const auto experts = [&](const std::string& path, std::vector<int64_t> shape, ExpertProj proj,
                           const std::string& hf, bool residual_out) {
    if (path.empty()) return;
    b.linear(Slot::kExperts, path, TensorRole::kExperts, i, std::move(shape), eb, proj, hf,
             residual_out);
    b.last().hf_fused = n.hf_expert_gate.empty() ? n.hf_fused : HfFusedExperts::kNone;
  };
  experts(n.experts_gate, {E, F, H}, ExpertProj::kGate, hf_gate, false);
  experts(n.experts_up, {E, F, H}, ExpertProj::kUp, hf_up, false);
  experts(n.experts_down, {E, H, F}, ExpertProj::kDown, hf_down, true);
  if (S > 0) {
    b.linear(Slot::kSharedGate, n.shared_gate, TensorRole::kSharedExpert, i, {S, H}, false);
    b.linear(Slot::kSharedUp, n.shared_up, TensorRole::kSharedExpert, i, {S, H}, false);
    b.output(Slot::kSharedDown, n.shared_down, TensorRole::kSharedExpert, i, {H, S}, false);
  }
  b.linear(Slot::kSharedExpertGate, n.shared_expert_gate, TensorRole::kSharedExpertGate, i, {1, H},
           false);
}

}  // namespace

std::vector<ModuleSpec> module_table(const ModelConfig& c) {
  TableBuilder b(c);
  b.push({c.embed_name, ModuleKind::kEmbedding, TensorRole::kEmbedding, -1, {c.vocab, c.hidden}},
         Slot::kEmbedding);
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const LayerPlan& l = c.layers[size_t(i)];
    b.norm(Slot::kInputNorm, l.names.input_norm, TensorRole::kNorm, i, c.hidden);
    if (l.mixer == MixerKind::kAttention)
      add_attention(b, c, l, i);
    else if (l.mixer == MixerKind::kShortConv)
      add_short_conv(b, c, l, i);
    else if (l.mixer == MixerKind::kMla)
      add_mla(b, c, l, i);
    else if (l.mixer == MixerKind::kGatedDeltaNet)
      add_gated_delta(b, c, l, i);
    else if (l.mixer == MixerKind::kMamba2)
      add_mamba2(b, c, l, i);
    b.norm(Slot::kPostNorm, l.names.post_norm, TensorRole::kNorm, i, c.hidden);
    if (l.ffn == FfnKind::kMoe) {
      add_moe(b, c, l, i);
    } else if (l.ffn == FfnKind::kDense) {
      const int64_t H = c.hidden, F = l.ffn_dff;
      b.linear(Slot::kDenseGate, l.names.dense_gate, TensorRole::kDenseFfn, i, {F, H}, false);
      b.linear(Slot::kDenseUp, l.names.dense_up, TensorRole::kDenseFfn, i, {F, H}, false);
      b.output(Slot::kDenseDown, l.names.dense_down, TensorRole::kDenseFfn, i, {H, F}, false);
    }
    b.norm(Slot::kFfnOutNorm, l.names.ffn_out_norm, TensorRole::kNorm, i, c.hidden);
    if (!l.names.layer_scalar.empty())
      b.push({l.names.layer_scalar, ModuleKind::kTensor, TensorRole::kNorm, i, {1}},
             Slot::kLayerScalar);
  }
  b.norm(Slot::kFinalNorm, c.final_norm_name, TensorRole::kNorm, -1, c.hidden);
  if (!c.tie_word_embeddings)
    b.linear(Slot::kLmHead, c.lm_head_name, TensorRole::kLmHead, -1, {c.vocab, c.hidden},
             c.lm_head_bias);
  return b.take();
}

std::vector<int64_t> stored_weight_shape(const ModuleSpec& m, const std::vector<int64_t>* found) {
  if (m.kind != ModuleKind::kConv1d || !found) return m.shape;
  const std::vector<int64_t> torch = {m.shape[0], 1, m.shape[1]};
  return *found == torch ? torch : m.shape;
}

std::vector<TensorRecord> expand_tensors(const std::vector<ModuleSpec>& modules, DType float_dtype,
                                         const QuantDecision& decide) {
  if (!is_float_dtype(float_dtype))
    fail("model dtype must be F32, F16 or BF16, got ", dtype_name(float_dtype));
  std::vector<TensorRecord> out;
  for (const ModuleSpec& m : modules) {
    TensorRecord base;
    base.module = m.path;
    base.role = m.role;
    base.layer = m.layer;
    base.proj = m.proj;
    base.num_experts = m.num_experts();
    base.dtype = m.keep_f32 ? DType::F32 : float_dtype;
    if (m.kind == ModuleKind::kTensor) {
      TensorRecord t = base;
      t.name = m.path;
      t.shape = m.shape;
      out.push_back(std::move(t));
      continue;
    }
    std::optional<io::ModuleQuant> q;
    if (m.quantizable()) q = decide(m);
    if (q) {
      const std::optional<quant::Mode> mode = quant::mode_from_name(q->mode, true);
      if (!mode) fail(m.path, ": quantization mode '", q->mode, "' is not supported");
      const bool fp = quant::is_fp_mode(*mode) || quant::is_ggml_mode(*mode);  // no biases
      const quant::Format f = quant::Format::named(*mode, q->bits, q->group_size, float_dtype);
      if (quant::format_unsupported_reason(f))
        fail(m.path, ": invalid quantization bits ", q->bits, " / group_size ", q->group_size,
             " for mode ", q->mode);
      if (const char* why = quant::format_unsupported_reason(f, m.in_dim()))
        fail(m.path, ": input width ", m.in_dim(), ": ", why);
      base.bits = q->bits;
      base.group_size = q->group_size;
      base.mode = *mode;
      TensorRecord w = base, s = base, z = base;
      w.name = m.path + ".weight";
      w.dtype = DType::U32;
      w.shape = m.shape;
      w.shape.back() = m.in_dim() * q->bits / 32;
      s.name = m.path + ".scales";
      s.part = TensorPart::kScales;
      s.shape = m.shape;
      s.shape.back() = f.scale_row_bytes(m.in_dim()) / int64_t(dtype_size(f.scale_dtype));
      if (fp) s.dtype = f.scale_dtype;
      z.name = m.path + ".biases";
      z.part = TensorPart::kBiases;
      z.shape = s.shape;
      out.push_back(std::move(w));
      out.push_back(std::move(s));
      if (!fp) out.push_back(std::move(z));
    } else {
      TensorRecord w = base;
      w.name = m.path + ".weight";
      w.shape = m.shape;
      out.push_back(std::move(w));
    }
    if (m.bias || m.kind == ModuleKind::kLayerNorm) {
      TensorRecord b = base;
      b.name = m.path + ".bias";
      b.part = TensorPart::kBias;
      b.dtype = m.keep_f32 ? DType::F32 : float_dtype;
      b.bits = b.group_size = 0;
      b.mode = quant::Mode::kAffine;
      if (m.kind == ModuleKind::kLinear)
        b.shape.assign(m.shape.begin(), m.shape.end() - 1);
      else
        b.shape = {m.shape[0]};
      out.push_back(std::move(b));
    }
  }
  return out;
}

const ModuleSpec* find_module(const std::vector<ModuleSpec>& modules, const std::string& path) {
  for (const ModuleSpec& m : modules)
    if (m.path == path) return &m;
  return nullptr;
}

}  // namespace moex::model
