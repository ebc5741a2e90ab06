// MoE routers: from router logits f32 [M][E] to the selected experts and their scores
// [M][K], one rule per family exactly as mlx-lm's model files compute it (mlx-lm 0.32).
// Top-k selection reproduces MLX's CPU argpartition, including its tie-breaking (see topk.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace moex::moe {

enum class RoutingRule {
  // p = softmax(l); top-k of p; scores p_k, divided by sum_k p_k when renormalize
  // (qwen3_moe: norm_topk_prob; olmoe: norm_topk_prob; qwen2_moe: never).
  kSoftmaxTopK,
  // top-k of l; scores = softmax over the k selected logits (mixtral).
  kTopKSoftmax,
  // phimoe as mlx-lm 0.32 runs it (HF's sparsemixer, inference path): k rounds of
  // "argmax of the still-unmasked logits, softmax over the jitter band around it".
  kSparseMixer,
  // s = sigmoid(l); select top-k of s + expert_bias (bias for selection only); scores s_k,
  // divided by (sum_k s_k + renorm_eps) when renormalize, then times routed_scaling
  // (lfm2_moe: eps 1e-6). With n_group > 1 the selection is group-limited first (glm4_moe,
  // DeepSeek's noaux_tc): experts split into n_group equal groups, a group's score is the sum
  // of its group_score_top largest biased scores (2 there; 1, the maximum, in DeepSeek-V2's
  // group_limited_greedy), the n_group - topk_group lowest groups are zeroed.
  kSigmoidBiasTopK,
  // top-1 of l; sigmoid(l_k) scales the expert INPUT, the output weight is 1 (llama4).
  kSigmoidTop1ScalesInput,
};
const char* routing_rule_name(RoutingRule r);

// How ties at the top-k boundary are broken; both reproduce MLX's argpartition.
enum class TopKTies {
  // argpartition(v, kth=-k)[-k:]: among equal values the HIGHER expert index wins
  // (qwen3_moe, lfm2_moe).
  kHigherIndexWins,
  // argpartition(-v, kth=k-1)[:k]: among equal values the LOWER expert index wins
  // (mixtral, olmoe, qwen2_moe, llama4).
  kLowerIndexWins,
};

struct RouterConfig {
  RoutingRule rule = RoutingRule::kSoftmaxTopK;
  TopKTies ties = TopKTies::kHigherIndexWins;
  int64_t num_experts = 0;
  int64_t top_k = 0;
  bool renormalize = false;        // kSoftmaxTopK, kSigmoidBiasTopK
  float routed_scaling = 1.0f;     // kSigmoidBiasTopK
  float renorm_eps = 1e-6f;        // kSigmoidBiasTopK: added to the sum when renormalizing
  // kSoftmaxTopK, kSigmoidBiasTopK: the renormalizing divisor is max(sum + eps, renorm_floor)
  // (ernie4_5_moe: max(sum, 1e-12)); 0 leaves it the sum.
  float renorm_floor = 0.f;
  // kSigmoidBiasTopK: the scores are softmax(l) over all experts instead of sigmoid(l)
  // (bailing_moe's score_function "softmax"); bias, groups and scaling act the same.
  bool softmax_scores = false;
  int64_t n_group = 1, topk_group = 1;  // kSigmoidBiasTopK: group-limited selection
  // kSigmoidBiasTopK with n_group > 1: how many of a group's largest scores add up to the
  // group's score (2: DeepSeek-V3's noaux_tc; 1: the maximum). At most the group's size.
  int64_t group_score_top = 2;
  // kSigmoidBiasTopK without a bias: the k scores are read from the selection scores after the
  // group masking (an expert of a zeroed group scores 0, as deepseek_v2's MoEGate gathers
  // them) instead of from the unmasked scores (glm4_moe, DeepSeek-V3).
  bool scores_from_selection = false;
  std::vector<float> expert_bias;  // kSigmoidBiasTopK: [E] or empty (no bias)
  float jitter_eps = 0.01f;        // kSparseMixer: router_jitter_noise
  // kTopKSoftmax: each score is multiplied by expert_scale[its expert] after the softmax
  // (gemma4_text's per_expert_scale); [E] or empty (none).
  std::vector<float> expert_scale;

  // Throws moex::Error naming the field when the config is inconsistent
  // (k outside [1, E], bias of the wrong size, llama4 with k != 1, ...).
  void validate() const;
  // Output of the routed experts is scaled by the score (false: the input is, llama4).
  bool scores_scale_output() const { return rule != RoutingRule::kSigmoidTop1ScalesInput; }
};

// One line naming the rule and what sets it apart, e.g. "softmax_topk renorm ties-high" or
// "sigmoid_bias_topk renorm groups 8/4 scale 2.5" (inspect, describe_layer).
std::string router_summary(const RouterConfig& c);

// Family presets, each as the mlx-lm model file of that name defines its router. The arch
// files of src/model call them with an empty bias or scale; the engine fills those from the
// checkpoint's tensors.
RouterConfig qwen3_moe_router(int64_t experts, int64_t top_k, bool norm_topk_prob);
RouterConfig olmoe_router(int64_t experts, int64_t top_k, bool norm_topk_prob);
RouterConfig qwen2_moe_router(int64_t experts, int64_t top_k);
RouterConfig mixtral_router(int64_t experts, int64_t top_k);
RouterConfig phimoe_router(int64_t experts, int64_t top_k, float jitter_eps);
RouterConfig lfm2_moe_router(int64_t experts, int64_t top_k, bool norm_topk_prob,
                             float routed_scaling, std::vector<float> expert_bias);
RouterConfig llama4_router(int64_t experts, int64_t top_k);
// minimax (MiniMax-M2): sigmoid + correction bias for the selection, ties to the lower
// index, always renormalized with an eps of 1e-20, no scaling.
RouterConfig minimax_router(int64_t experts, int64_t top_k, std::vector<float> expert_bias);
// glm4_moe and dots1 (DeepSeek-V3's "noaux_tc", mlx-lm group_expert_select in both files):
// ties to the lower index, no renormalization eps, renormalized only when top_k > 1.
// ernie4_5_moe: softmax (or sigmoid with `sigmoid`) over all experts in f32, top-k of it with
// ties to the lower index, divided by max(sum, 1e-12). With `selection_bias` the top-k is of
// the scores plus a per-expert bias (bound with the weights) and the unbiased scores are kept,
// as the Hugging Face model's moe_statics.e_score_correction_bias acts (sigmoid_bias_topk,
// softmax-scored unless `sigmoid`).
RouterConfig ernie4_5_moe_router(int64_t experts, int64_t top_k, bool sigmoid,
                                 bool selection_bias = false);
// bailing_moe (mlx-lm group_expert_select in bailing_moe.py): softmax or sigmoid scores in f32,
// optional selection bias, group-limited like glm4_moe, top-k with ties to the HIGHER index,
// divided by (sum + 1e-20) when norm_topk_prob and k > 1, then always * routed_scaling.
RouterConfig bailing_moe_router(int64_t experts, int64_t top_k, bool softmax, bool norm_topk_prob,
                                float routed_scaling, std::vector<float> expert_bias,
                                int64_t n_group, int64_t topk_group);
// gemma4_text: top-k of the logits with ties to the HIGHER index (argpartition(l, kth=-k)[-k:]),
// softmax over the k selected logits, times per_expert_scale[id]; no renormalization after.
RouterConfig topk_softmax_expert_scale_router(int64_t experts, int64_t top_k,
                                              std::vector<float> per_expert_scale);
RouterConfig group_limited_sigmoid_router(int64_t experts, int64_t top_k, bool norm_topk_prob,
                                          float routed_scaling, std::vector<float> expert_bias,
                                          int64_t n_group, int64_t topk_group);

// Routes M tokens. Holds its scratch (reused, so routing one token allocates nothing);
// not thread-safe: one Router per thread.
class Router {
 public:
  explicit Router(RouterConfig config);  // validates
  const RouterConfig& config() const { return config_; }

  // logits [M][E] -> ids [M][K], scores [M][K]. The order of the k entries of a token is
  // MLX's argpartition order (the order the weighted sum then adds them in).
  void route(const float* logits, int64_t tokens, int32_t* ids, float* scores);

 private:
  void route_one(const float* logits, int32_t* ids, float* scores);
  void sparse_mixer_one(const float* logits, int32_t* ids, float* scores);
  void limit_groups(float* biased_scores);

  RouterConfig config_;
  std::vector<float> probs_, keys_, negated_;
  std::vector<uint32_t> order_;
  std::vector<float> group_neg_, group_scratch_;  // [n_group]
  std::vector<uint32_t> group_order_;
  std::vector<int32_t> group_ids_;
  std::vector<float> top_scratch_;  // [group_score_top]
};

// sigmoid as MLX computes it for f32 (1 / (1 + exp(-x))).
float router_sigmoid(float x);

}  // namespace moex::moe
