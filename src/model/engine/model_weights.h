// The weights of one model as views into its checkpoint, laid out by the family's layer plan
// (model/model_config.h): norms, attention projections (+ biases, q/k norms), dense FFNs,
// MoE routers, stacked experts and shared experts, the embedding and the head.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/moe_contract.h"
#include "model/engine/gated_deltanet.h"
#include "model/engine/mamba2.h"
#include "model/engine/mla.h"
#include "model/engine/short_conv.h"
#include "model/engine/weight_binder.h"
#include "model/model_config.h"
#include "backend/cpu/float_vec.h"
#include "backend/cpu/linear.h"

namespace moex::model::engine {

struct NormWeights {
  ops::FloatVec weight, bias;  // bias: LayerNorm only
};

struct AttentionWeights {
  ops::Linear q, k, v, o;
  ops::FloatVec q_norm, k_norm;  // empty when the layer has no q/k norm weights
  ops::FloatVec sinks;           // [heads] attention sink logits, or empty
};

struct MlpWeights {  // down(act(gate(x), up(x))); relu2: down(relu(up(x))^2), gate unbound
  ops::Linear gate, up, down;
};

struct MoeWeights {
  ops::Linear router;                // [E][H]
  kernels::MoeExpertsView experts;   // stacked [E][Dff][H] / [E][H][Dff]
  bool stacked_in_checkpoint = true; // false: stacked here from per-expert tensors
  bool has_shared = false;
  MlpWeights shared;
  ops::Linear shared_gate;           // Qwen2-MoE: Linear(H, 1), sigmoid-gated
  std::vector<float> expert_bias;    // LFM2: selection bias [E]
  // OLMoE mlp_bias: per-expert linear biases in f32, [E][Dff] (gate, up) and [E][H] (down);
  // empty without. MoeFfn points the kernel view at them.
  ops::FloatVec gate_bias, up_bias, down_bias;
  // Gemma-4: the router's input is RMSNorm(router input) with this [H] weight (router.scale *
  // hidden^-0.5, multiplied in f32 at load); empty: the router reads its input as it is.
  std::vector<float> router_norm;
  std::vector<float> expert_scale;  // [E] per-expert score multiplier, or empty
  NormWeights experts_in_norm, experts_out_norm;  // empty weights: none
};

struct LayerWeights {
  NormWeights input_norm, post_norm;
  // Output norms (Gemma-4; empty weights: none): of the attention output, of the FFN output,
  // of a parallel dense MLP's output.
  NormWeights attn_out_norm, ffn_out_norm, dense_out_norm;
  float layer_scalar = 1.f;  // the residual stream is multiplied by it after the layer
  AttentionWeights attn;     // MixerKind::kAttention
  ShortConvWeights conv;     // MixerKind::kShortConv
  GatedDeltaNetWeights gdn;  // MixerKind::kGatedDeltaNet
  Mamba2Weights mamba;       // MixerKind::kMamba2
  MlaWeights mla;            // MixerKind::kMla
  MlpWeights dense;  // FfnKind::kDense
  MoeWeights moe;    // FfnKind::kMoe
};

struct ModelWeights {
  ops::MatrixRef embed;  // [vocab][H]
  ops::Linear lm_head;   // the embedding itself when tied
  NormWeights final_norm;
  std::vector<LayerWeights> layers;
  int64_t stacked_copy_bytes = 0;  // bytes copied to stack per-expert layouts
};

// Binds every tensor the plan needs, checking names, dtypes and shapes. Throws moex::Error
// naming the tensor on any mismatch; unsupported plan features are an Error naming them.
ModelWeights bind_model_weights(const ModelConfig& cfg, WeightBinder& binder);

// mlx-lm qwen3_next / qwen3_5 sanitize: a config with hf_layout_norms_plus_one whose checkpoint
// holds per-expert or fused expert tensors (the Hugging Face layout) stores the decoder's
// RMSNorm weights (not the Gated DeltaNet's gated norm) zero-centred, read as 1 + w.
bool norms_stored_zero_centred(const ModelConfig& cfg, const ModelWeights& w);
// v + 1, each sum rounded to the dtype `module`.weight is stored in, as MLX adds in it.
void add_one_to_norm(ops::FloatVec& v, const WeightBinder& binder, const std::string& module);
// add_one_to_norm on the final norm and every layer's input, post-mixer and q / k norms
// (bind_model_weights does it where norms_stored_zero_centred).
void add_one_to_decoder_norms(const ModelConfig& cfg, const WeightBinder& binder, ModelWeights& w);

// The kernels' activation of a config's activation kind.
kernels::Activation kernel_activation(ExpertActivation a);

}  // namespace moex::model::engine
