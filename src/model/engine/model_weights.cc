// bind_model_weights: one visitor over the family's tensor table (model/tensor_table.h), each
// module bound with the shape and bias the table gives into the slot it names.
#include "model/engine/model_weights.h"

#include <cmath>

#include "core/error.h"
#include "model/tensor_table.h"

namespace moex::model::engine {

namespace {

BiasMode bias_mode(const ModuleSpec& m) { return m.bias ? BiasMode::kRequired : BiasMode::kNone; }

ops::Linear bind_linear(WeightBinder& b, const ModuleSpec& m) {
  return b.linear(m.path, m.shape[0], m.shape[1], bias_mode(m));
}

NormWeights bind_norm(WeightBinder& b, const ModuleSpec& m) {
  NormWeights n;
  n.weight = b.vector(m.path + ".weight", m.shape[0]);
  if (m.kind == ModuleKind::kLayerNorm) n.bias = b.vector(m.path + ".bias", m.shape[0]);
  return n;
}

// LFM2's depthwise Conv1d weight in MLX's or PyTorch's layout (stored_weight_shape).
ops::FloatVec bind_conv(WeightBinder& b, const ModuleSpec& m) {
  const std::string w = m.path + ".weight";
  return b.tensor(w, stored_weight_shape(m, b.has(w) ? &b.shape_of(w) : nullptr));
}

// One stacked expert projection [E][out][in]: stacked in the checkpoint, per expert (a
// pattern with "{e}"), or fused Hugging Face tensors: Llama-4's inputs-first gate_up
// [E, H, 2*Dff] and down [E, Dff, H], transposed into stacks as mlx-lm's sanitize does;
// Granite's / Gemma-4's outputs-first gate_up [E, 2*Dff, H] (gate rows first), whose halves
// are copied apart, and down [E, H, Dff], read in place.
kernels::QuantWeightsView bind_experts(WeightBinder& b, const ModuleSpec& m, MoeWeights& moe) {
  const int64_t E = m.shape[0], out = m.shape[1], in = m.shape[2];
  const std::string& hf = m.hf_pattern;
  const bool stacked = b.has(m.path + ".weight") || hf.empty();
  if (m.proj == ExpertProj::kUp) moe.stacked_in_checkpoint = stacked;
  if (stacked) return b.stacked(m.path, E, out, in);
  if (m.bias)
    fail(m.path, ": per-expert checkpoints with expert biases are not stacked here yet;",
         " convert with mlx_lm.convert (it stacks them)");
  if (hf.find("{e}") != std::string::npos) return b.stack_experts(hf, E, out, in);
  if (m.hf_fused == HfFusedExperts::kOutputsFirst)
    return b.expert_rows(hf, E, m.hf_fused_rows(), in, m.proj == ExpertProj::kUp ? out : 0, out);
  switch (m.proj) {
    case ExpertProj::kGate: return b.transposed_experts(hf, E, in, 2 * out, 0, out);
    case ExpertProj::kUp: return b.transposed_experts(hf, E, in, 2 * out, out, out);
    default: return b.transposed_experts(hf, E, in, out, 0, out);
  }
}

// gpt-oss's original layout: gate = even rows and up = odd rows of gate_up_proj (weights and
// bias), down as stored; mxfp4 codes and scales used as MLX packs them (mlx-lm's sanitize).
kernels::QuantWeightsView bind_interleaved_mxfp4(WeightBinder& b, const ModuleSpec& m,
                                                 MoeWeights& moe, ops::FloatVec& bias) {
  const int64_t E = m.shape[0], out = m.shape[1], in = m.shape[2];
  const int64_t rows = m.hf_fused_rows(), row0 = m.proj == ExpertProj::kUp ? 1 : 0;
  const int64_t stride = m.proj == ExpertProj::kDown ? 1 : 2;
  moe.stacked_in_checkpoint = false;
  if (m.bias) bias = b.strided_rows(m.hf_pattern + "_bias", E, rows, row0, stride, out);
  return b.strided_mxfp4_experts(m.hf_pattern, E, rows, in, row0, stride, out);
}

void bind_expert_projection(WeightBinder& b, const ModuleSpec& m, MoeWeights& moe) {
  b.bind_expert_layer(m.layer);  // whose experts an expert-parallel rank copies
  const int64_t E = m.shape[0], out = m.shape[1];
  ops::FloatVec bias;
  const bool original =
      m.hf_fused == HfFusedExperts::kInterleavedMxfp4 && !b.has(m.path + ".weight");
  const kernels::QuantWeightsView v =
      original ? bind_interleaved_mxfp4(b, m, moe, bias) : bind_experts(b, m, moe);
  if (!original && m.bias) bias = b.tensor(m.path + ".bias", {E, out});
  switch (m.proj) {
    case ExpertProj::kGate:
      moe.experts.gate = v;
      moe.gate_bias = std::move(bias);
      break;
    case ExpertProj::kUp:
      moe.experts.up = v;
      moe.up_bias = std::move(bias);
      break;
    case ExpertProj::kDown:
      moe.experts.down = v;
      moe.down_bias = std::move(bias);
      break;
    case ExpertProj::kNone: fail("internal: expert module '", m.path, "' names no projection");
  }
}

void bind_module(const ModelConfig& c, WeightBinder& b, const ModuleSpec& m, ModelWeights& w) {
  LayerWeights* l = m.layer >= 0 ? &w.layers[size_t(m.layer)] : nullptr;
  switch (m.slot) {
    case Slot::kEmbedding: w.embed = b.linear(m.path, m.shape[0], m.shape[1], BiasMode::kNone).w; return;
    case Slot::kLmHead:
      // A quantized head can only come from mlx_lm convert, whose sanitize normalized it before
      // quantizing: it is read as it is (docs/families.md, bailing_moe).
      w.lm_head = c.lm_head_column_norm && !b.has(m.path + ".scales")
                      ? b.column_normalized(m.path, m.shape[0], m.shape[1])
                      : bind_linear(b, m);
      return;
    case Slot::kFinalNorm: w.final_norm = bind_norm(b, m); return;
    case Slot::kInputNorm: l->input_norm = bind_norm(b, m); return;
    case Slot::kPostNorm: l->post_norm = bind_norm(b, m); return;
    case Slot::kQ:
      (c.layers[size_t(m.layer)].mixer == MixerKind::kMla ? l->mla.q : l->attn.q) =
          bind_linear(b, m);
      return;
    case Slot::kK: l->attn.k = bind_linear(b, m); return;
    case Slot::kV: l->attn.v = bind_linear(b, m); return;
    case Slot::kO:
      (c.layers[size_t(m.layer)].mixer == MixerKind::kMla ? l->mla.o : l->attn.o) =
          bind_linear(b, m);
      return;
    case Slot::kMlaQA: l->mla.q_a = bind_linear(b, m); return;
    case Slot::kMlaQANorm: l->mla.q_a_norm = b.vector(m.path + ".weight", m.shape[0]); return;
    case Slot::kMlaQB: l->mla.q_b = bind_linear(b, m); return;
    case Slot::kMlaKvA: l->mla.kv_a = bind_linear(b, m); return;
    case Slot::kMlaKvANorm: l->mla.kv_a_norm = b.vector(m.path + ".weight", m.shape[0]); return;
    case Slot::kMlaEmbedQ:
    case Slot::kMlaUnembedOut: {
      const bool keys = m.slot == Slot::kMlaEmbedQ;
      const bool hf = !m.hf_pattern.empty() && !b.has(m.path + ".weight");
      const MlaParams& p = c.mla;
      (keys ? l->mla.embed_q : l->mla.unembed_out) =
          hf ? b.kv_b_split(m.hf_pattern, c.heads, p.nope_dim, p.v_head_dim, p.kv_lora_rank,
                            keys)
             : b.stacked(m.path, m.shape[0], m.shape[1], m.shape[2]);
      return;
    }
    case Slot::kMlaKvB: {  // one Linear (deepseek_v2): split as mlx-lm's deepseek_v3 would
      const MlaParams& p = c.mla;
      for (const bool keys : {true, false})
        (keys ? l->mla.embed_q : l->mla.unembed_out) =
            b.kv_b_split(m.path, c.heads, p.nope_dim, p.v_head_dim, p.kv_lora_rank, keys);
      return;
    }
    case Slot::kQkv: {  // q, k and v are consecutive row ranges of the one stored matrix
      const ops::Linear fused = bind_linear(b, m);
      const int64_t q = c.layer_q_dim(m.layer), kv = c.layer_kv_dim(m.layer);
      l->attn.q = ops::linear_rows(fused, 0, q, m.path + " [q rows]");
      l->attn.k = ops::linear_rows(fused, q, kv, m.path + " [k rows]");
      l->attn.v = ops::linear_rows(fused, q + kv, kv, m.path + " [v rows]");
      return;
    }
    case Slot::kQNorm: l->attn.q_norm = b.vector(m.path + ".weight", m.shape[0]); return;
    case Slot::kKNorm: l->attn.k_norm = b.vector(m.path + ".weight", m.shape[0]); return;
    case Slot::kSinks: l->attn.sinks = b.vector(m.path, m.shape[0]); return;
    case Slot::kConvIn: l->conv.in_proj = bind_linear(b, m); return;
    case Slot::kConv:
      l->conv.conv = bind_conv(b, m);
      if (m.bias) l->conv.bias = b.vector(m.path + ".bias", m.shape[0]);
      return;
    case Slot::kConvOut: l->conv.out_proj = bind_linear(b, m); return;
    case Slot::kGdnQkvz: l->gdn.qkvz = bind_linear(b, m); return;
    case Slot::kGdnBa: l->gdn.ba = bind_linear(b, m); return;
    case Slot::kGdnQkv: l->gdn.qkv = bind_linear(b, m); return;
    case Slot::kGdnZ: l->gdn.z = bind_linear(b, m); return;
    case Slot::kGdnB: l->gdn.b = bind_linear(b, m); return;
    case Slot::kGdnA: l->gdn.a = bind_linear(b, m); return;
    case Slot::kGdnConv: l->gdn.conv = bind_conv(b, m); return;
    case Slot::kGdnDtBias: l->gdn.dt_bias = b.vector(m.path, m.shape[0]); return;
    case Slot::kGdnALog: l->gdn.a_log = b.vector(m.path, m.shape[0]); return;
    case Slot::kGdnNorm: l->gdn.norm = b.vector(m.path + ".weight", m.shape[0]); return;
    case Slot::kGdnOut: l->gdn.out_proj = bind_linear(b, m); return;
    case Slot::kMambaIn: l->mamba.in_proj = bind_linear(b, m); return;
    case Slot::kMambaConv:
      l->mamba.conv = bind_conv(b, m);
      if (m.bias) l->mamba.conv_bias = b.vector(m.path + ".bias", m.shape[0]);
      return;
    case Slot::kMambaDtBias: l->mamba.dt_bias = b.vector(m.path, m.shape[0]); return;
    case Slot::kMambaALog: l->mamba.a_log = b.vector(m.path, m.shape[0]); return;
    case Slot::kMambaD: l->mamba.d = b.vector(m.path, m.shape[0]); return;
    case Slot::kMambaNorm: l->mamba.norm = b.vector(m.path + ".weight", m.shape[0]); return;
    case Slot::kMambaOut: l->mamba.out_proj = bind_linear(b, m); return;
    case Slot::kDenseGate: l->dense.gate = bind_linear(b, m); return;
    case Slot::kDenseUp: l->dense.up = bind_linear(b, m); return;
    case Slot::kDenseDown: l->dense.down = bind_linear(b, m); return;
    case Slot::kRouter: l->moe.router = bind_linear(b, m); return;
    case Slot::kExpertBias: {
      const ops::FloatVec bias = b.vector(m.path, m.shape[0]);
      l->moe.expert_bias.assign(bias.data(), bias.data() + bias.size());
      return;
    }
    case Slot::kExperts: bind_expert_projection(b, m, l->moe); return;
    case Slot::kSharedGate:
      l->moe.has_shared = true;
      l->moe.shared.gate = bind_linear(b, m);
      return;
    case Slot::kSharedUp:  // a relu2 shared expert has no gate
      l->moe.has_shared = true;
      l->moe.shared.up = bind_linear(b, m);
      return;
    case Slot::kSharedDown: l->moe.shared.down = bind_linear(b, m); return;
    case Slot::kSharedExpertGate: l->moe.shared_gate = bind_linear(b, m); return;
    case Slot::kAttnOutNorm: l->attn_out_norm = bind_norm(b, m); return;
    case Slot::kFfnOutNorm: l->ffn_out_norm = bind_norm(b, m); return;
    case Slot::kDenseOutNorm: l->dense_out_norm = bind_norm(b, m); return;
    case Slot::kExpertsInNorm: l->moe.experts_in_norm = bind_norm(b, m); return;
    case Slot::kExpertsOutNorm: l->moe.experts_out_norm = bind_norm(b, m); return;
    case Slot::kRouterInputScale: {
      // mlx-lm: rms_norm(x, scale * hidden**-0.5): the product formed once, in f32.
      const ops::FloatVec scale = b.vector(m.path, m.shape[0]);
      const float root = float(std::pow(double(c.hidden), -0.5));
      l->moe.router_norm.resize(size_t(scale.size()));
      for (size_t j = 0; j < l->moe.router_norm.size(); ++j)
        l->moe.router_norm[j] = scale.host()[j] * root;
      return;
    }
    case Slot::kRouterExpertScale: {
      const ops::FloatVec s = b.vector(m.path, m.shape[0]);
      l->moe.expert_scale.assign(s.data(), s.data() + s.size());
      return;
    }
    case Slot::kLayerScalar: l->layer_scalar = b.vector(m.path, 1).host()[0]; return;
  }
  fail("internal: module '", m.path, "' has no slot");
}

}  // namespace

bool norms_stored_zero_centred(const ModelConfig& c, const ModelWeights& w) {
  if (!c.hf_layout_norms_plus_one) return false;
  for (int64_t i = 0; i < c.num_layers; ++i)
    if (c.layers[size_t(i)].ffn == FfnKind::kMoe && !w.layers[size_t(i)].moe.stacked_in_checkpoint)
      return true;
  return false;
}

void add_one_to_norm(ops::FloatVec& v, const WeightBinder& b, const std::string& module) {
  if (v.empty()) return;
  const DType t = b.dtype_of(module + ".weight");
  std::vector<float> x(v.data(), v.data() + v.size());
  for (float& e : x) {
    unsigned char buf[4];
    store_from_f32(buf, t, 0, e + 1.f);
    e = load_as_f32(buf, t, 0);
  }
  v = ops::FloatVec(std::move(x));
}

void add_one_to_decoder_norms(const ModelConfig& c, const WeightBinder& b, ModelWeights& w) {
  add_one_to_norm(w.final_norm.weight, b, c.final_norm_name);
  for (int64_t i = 0; i < c.num_layers; ++i) {
    LayerWeights& l = w.layers[size_t(i)];
    const LayerModules& n = c.layers[size_t(i)].names;
    add_one_to_norm(l.input_norm.weight, b, n.input_norm);
    add_one_to_norm(l.post_norm.weight, b, n.post_norm);
    add_one_to_norm(l.attn.q_norm, b, n.q_norm);
    add_one_to_norm(l.attn.k_norm, b, n.k_norm);
  }
}

kernels::Activation kernel_activation(ExpertActivation a) {
  switch (a) {
    case ExpertActivation::kSwiGLU: return kernels::Activation::kSwiGLU;
    case ExpertActivation::kSwiGLUOai: return kernels::Activation::kSwiGLUOai;
    case ExpertActivation::kGeGLU: return kernels::Activation::kGeGLU;
    case ExpertActivation::kReLU2: return kernels::Activation::kSquaredReLU;
  }
  return kernels::Activation::kSwiGLU;
}

ModelWeights bind_model_weights(const ModelConfig& c, WeightBinder& b) {
  ModelWeights w;
  w.layers.resize(size_t(c.num_layers));
  for (const ModuleSpec& m : module_table(c)) bind_module(c, b, m, w);
  if (c.tie_word_embeddings) {
    w.lm_head.w = w.embed;
    w.lm_head.name = c.embed_name + " (tied head)";
  }
  if (norms_stored_zero_centred(c, w)) add_one_to_decoder_norms(c, b, w);
  const kernels::Activation act = kernel_activation(c.moe.activation);
  for (LayerWeights& l : w.layers) l.moe.experts.act = act;
  w.stacked_copy_bytes = b.stacked_copy_bytes();
  return w;
}

}  // namespace moex::model::engine
