// bind_model_weights: walks the layer plan and binds each module with its expected shape.
#include "model/engine/model_weights.h"

#include "core/error.h"

namespace moex::model::engine {

namespace {

NormWeights bind_norm(const ModelConfig& c, WeightBinder& b, const std::string& path) {
  NormWeights n;
  n.weight = b.vector(path + ".weight", c.hidden);
  if (c.norm == NormKind::kLayerNorm) n.bias = b.vector(path + ".bias", c.hidden);
  return n;
}

MlpWeights bind_mlp(const ModelConfig& c, WeightBinder& b, const std::string& gate,
                    const std::string& up, const std::string& down, int64_t dff) {
  MlpWeights m;
  m.gate = b.linear(gate, dff, c.hidden, BiasMode::kNone);
  m.up = b.linear(up, dff, c.hidden, BiasMode::kNone);
  m.down = b.linear(down, c.hidden, dff, BiasMode::kNone);
  return m;
}

AttentionWeights bind_attention(const ModelConfig& c, WeightBinder& b, const LayerPlan& l) {
  const LayerModules& n = l.names;
  AttentionWeights a;
  auto mode = [](bool has) { return has ? BiasMode::kRequired : BiasMode::kNone; };
  a.q = b.linear(n.q, c.q_dim(), c.hidden, mode(c.q_bias));
  a.k = b.linear(n.k, c.kv_dim(), c.hidden, mode(c.k_bias));
  a.v = b.linear(n.v, c.kv_dim(), c.hidden, mode(c.v_bias));
  a.o = b.linear(n.o, c.hidden, c.q_dim(), mode(c.o_bias));
  if (c.attention_sinks) a.sinks = b.vector(n.sinks, c.heads);
  if (l.qk_norm) {
    switch (c.qk_norm) {
      case QkNormKind::kPerHead:
        a.q_norm = b.vector(n.q_norm + ".weight", c.head_dim);
        a.k_norm = b.vector(n.k_norm + ".weight", c.head_dim);
        break;
      case QkNormKind::kFullWidth:
        a.q_norm = b.vector(n.q_norm + ".weight", c.q_dim());
        a.k_norm = b.vector(n.k_norm + ".weight", c.kv_dim());
        break;
      case QkNormKind::kPerHeadNoWeight:
      case QkNormKind::kNone: break;
    }
  }
  return a;
}

ShortConvWeights bind_short_conv(const ModelConfig& c, WeightBinder& b, const LayerPlan& l) {
  const LayerModules& n = l.names;
  const BiasMode bias = c.conv_bias ? BiasMode::kRequired : BiasMode::kNone;
  ShortConvWeights w;
  w.in_proj = b.linear(n.conv_in, 3 * c.hidden, c.hidden, bias);
  w.out_proj = b.linear(n.conv_out, c.hidden, c.hidden, bias);
  // MLX's [H, L, 1] or PyTorch's [H, 1, L] (Hugging Face layout): the same bytes.
  const std::string cw = n.conv + ".weight";
  const std::vector<int64_t> torch = {c.hidden, 1, c.conv_kernel};
  const bool torch_layout = b.has(cw) && b.shape_of(cw) == torch;
  w.conv = b.tensor(cw, torch_layout ? torch : std::vector<int64_t>{c.hidden, c.conv_kernel, 1});
  if (c.conv_bias) w.bias = b.vector(n.conv + ".bias", c.hidden);
  return w;
}

MoeWeights bind_moe(const ModelConfig& c, WeightBinder& b, const LayerPlan& l) {
  const LayerModules& n = l.names;
  const MoeParams& p = c.moe;
  MoeWeights m;
  m.router = b.linear(n.router, p.num_experts, c.hidden,
                      p.router_bias ? BiasMode::kRequired : BiasMode::kNone);
  const int64_t dff = l.ffn_dff > 0 ? l.ffn_dff : p.expert_dff;
  const bool stacked = b.has(n.experts_up + ".weight");
  // Llama-4's Hugging Face layout: gate and up in one [E, H, 2*Dff] tensor, down [E, Dff, H]
  // (inputs first), transposed into stacks at load as mlx-lm's sanitize does.
  const bool fused_hf = !stacked && !n.hf_experts_gate_up.empty() && b.has(n.hf_experts_gate_up);
  m.stacked_in_checkpoint = stacked || (n.hf_expert_up.empty() && !fused_hf);
  auto proj = [&](const std::string& s, const std::string& hf, int64_t out, int64_t in) {
    return m.stacked_in_checkpoint ? b.stacked(s, p.num_experts, out, in)
                                   : b.stack_experts(hf, p.num_experts, out, in);
  };
  if (fused_hf) {
    m.experts.gate = b.transposed_experts(n.hf_experts_gate_up, p.num_experts, c.hidden, 2 * dff, 0, dff);
    m.experts.up = b.transposed_experts(n.hf_experts_gate_up, p.num_experts, c.hidden, 2 * dff, dff, dff);
    m.experts.down = b.transposed_experts(n.hf_experts_down, p.num_experts, dff, c.hidden, 0, c.hidden);
  } else {
    m.experts.gate = proj(n.experts_gate, n.hf_expert_gate, dff, c.hidden);
    m.experts.up = proj(n.experts_up, n.hf_expert_up, dff, c.hidden);
    m.experts.down = proj(n.experts_down, n.hf_expert_down, c.hidden, dff);
  }
  m.experts.act = p.activation == ExpertActivation::kSwiGLUOai ? kernels::Activation::kSwiGLUOai
                                                               : kernels::Activation::kSwiGLU;
  if (p.expert_linear_bias) {
    if (!m.stacked_in_checkpoint)
      fail(n.experts_up, ": per-expert checkpoints with expert biases are not stacked here yet;",
           " convert with mlx_lm.convert (it stacks them)");
    m.gate_bias = b.tensor(n.experts_gate + ".bias", {p.num_experts, dff});
    m.up_bias = b.tensor(n.experts_up + ".bias", {p.num_experts, dff});
    m.down_bias = b.tensor(n.experts_down + ".bias", {p.num_experts, c.hidden});
  }
  if (p.shared_dff > 0) {
    m.has_shared = true;
    m.shared = bind_mlp(c, b, n.shared_gate, n.shared_up, n.shared_down, p.shared_dff);
    if (p.shared_expert_gated) m.shared_gate = b.linear(n.shared_expert_gate, 1, c.hidden, BiasMode::kNone);
  }
  if (p.use_expert_bias) {
    ops::FloatVec bias = b.vector(n.expert_bias, p.num_experts);
    m.expert_bias.assign(bias.data(), bias.data() + bias.size());
  }
  return m;
}

}  // namespace

ModelWeights bind_model_weights(const ModelConfig& c, WeightBinder& b) {
  ModelWeights w;
  const std::string embed = c.embed_name;
  w.embed = b.linear(embed, c.vocab, c.hidden, BiasMode::kNone).w;
  if (c.tie_word_embeddings) {
    w.lm_head.w = w.embed;
    w.lm_head.name = embed + " (tied head)";
  } else {
    w.lm_head = b.linear(c.lm_head_name, c.vocab, c.hidden,
                         c.lm_head_bias ? BiasMode::kRequired : BiasMode::kNone);
  }
  w.final_norm = bind_norm(c, b, c.final_norm_name);
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const LayerPlan& l = c.layers[size_t(i)];
    LayerWeights lw;
    lw.input_norm = bind_norm(c, b, l.names.input_norm);
    lw.post_norm = bind_norm(c, b, l.names.post_norm);
    if (l.mixer == MixerKind::kAttention)
      lw.attn = bind_attention(c, b, l);
    else
      lw.conv = bind_short_conv(c, b, l);
    if (l.ffn == FfnKind::kDense) {
      lw.dense = bind_mlp(c, b, l.names.dense_gate, l.names.dense_up, l.names.dense_down, l.ffn_dff);
    } else {
      lw.moe = bind_moe(c, b, l);
    }
    w.layers.push_back(std::move(lw));
  }
  w.stacked_copy_bytes = b.stacked_copy_bytes();
  return w;
}

}  // namespace moex::model::engine
