// The routing rules of router.h, each following its mlx-lm model file line by line.
#include "moe/router.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "moe/topk.h"

namespace moex::moe {
namespace {

// MLX's CPU softmax for f32 rows: exp(v - max) * (1 / sum). -inf entries become 0.
void softmax_inplace(float* v, int64_t n) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, v[i]);
  float sum = 0.f;
  for (int64_t i = 0; i < n; ++i) {
    v[i] = std::exp(v[i] - mx);
    sum += v[i];
  }
  const float inv = 1.f / sum;
  for (int64_t i = 0; i < n; ++i) v[i] *= inv;
}

RouterConfig base(RoutingRule rule, TopKTies ties, int64_t experts, int64_t top_k) {
  RouterConfig c;
  c.rule = rule;
  c.ties = ties;
  c.num_experts = experts;
  c.top_k = top_k;
  return c;
}

}  // namespace

const char* routing_rule_name(RoutingRule r) {
  switch (r) {
    case RoutingRule::kSoftmaxTopK:
      return "softmax_topk";
    case RoutingRule::kTopKSoftmax:
      return "topk_softmax";
    case RoutingRule::kSparseMixer:
      return "sparsemixer";
    case RoutingRule::kSigmoidBiasTopK:
      return "sigmoid_bias_topk";
    case RoutingRule::kSigmoidTop1ScalesInput:
      return "sigmoid_top1_scales_input";
  }
  return "?";
}

float router_sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }

void RouterConfig::validate() const {
  if (num_experts < 1 || num_experts > (int64_t{1} << 20))
    fail("router: num_experts = ", num_experts, "; expected an integer in [1, 1048576]");
  if (top_k < 1 || top_k > num_experts)
    fail("router: top_k = ", top_k, "; expected an integer in [1, num_experts = ", num_experts,
         "]");
  if (rule == RoutingRule::kSigmoidTop1ScalesInput && top_k != 1)
    fail(
        "router: llama4 routing scales the expert input by the score and supports top_k = 1 "
        "only (mlx-lm asserts the same); got top_k = ",
        top_k);
  if (!expert_bias.empty() && rule != RoutingRule::kSigmoidBiasTopK)
    fail("router: expert_bias is only used by sigmoid_bias_topk routing (lfm2_moe), not by ",
         routing_rule_name(rule));
  if (!expert_bias.empty() && int64_t(expert_bias.size()) != num_experts)
    fail("router: expert_bias has ", expert_bias.size(),
         " entries; expected num_experts = ", num_experts);
  for (float b : expert_bias)
    if (!std::isfinite(b)) fail("router: expert_bias holds a non-finite value");
  if (!expert_scale.empty() && rule != RoutingRule::kTopKSoftmax)
    fail("router: a per-expert scale is only used by topk_softmax routing (gemma4_text), not by ",
         routing_rule_name(rule));
  if (!expert_scale.empty() && int64_t(expert_scale.size()) != num_experts)
    fail("router: per_expert_scale has ", expert_scale.size(),
         " entries; expected num_experts = ", num_experts);
  if (!std::isfinite(routed_scaling)) fail("router: routed_scaling_factor is not finite");
  if (!(renorm_floor >= 0.f) || !std::isfinite(renorm_floor))
    fail("router: renorm_floor = ", renorm_floor, "; expected a finite value >= 0");
  if (n_group < 1 || num_experts % n_group != 0)
    fail("router: n_group = ", n_group, "; expected a divisor of num_experts = ", num_experts);
  if (topk_group < 1 || topk_group > n_group)
    fail("router: topk_group = ", topk_group, "; expected an integer in [1, n_group = ", n_group,
         "]");
  if (n_group > 1 && rule != RoutingRule::kSigmoidBiasTopK)
    fail("router: group-limited selection (n_group > 1) is only used by sigmoid_bias_topk");
  if (scores_from_selection && (rule != RoutingRule::kSigmoidBiasTopK || !expert_bias.empty()))
    fail("router: scores_from_selection reads the masked selection scores of sigmoid_bias_topk "
         "routing without an expert_bias");
  if (group_score_top < 1)
    fail("router: group_score_top = ", group_score_top, "; expected at least 1");
  if (n_group > 1 && num_experts / n_group < group_score_top)
    fail("router: n_group = ", n_group, " leaves fewer than ", group_score_top,
         " experts per group (a group's score is the sum of its ", group_score_top, " best)");
  if (top_k > topk_group * (num_experts / n_group))
    fail("router: top_k = ", top_k, " exceeds the ", topk_group * (num_experts / n_group),
         " experts of the topk_group = ", topk_group, " groups kept");
  if (rule == RoutingRule::kSparseMixer && !(jitter_eps >= 0.f && std::isfinite(jitter_eps)))
    fail("router: router_jitter_noise = ", jitter_eps, "; expected a finite value >= 0");
}

std::string router_summary(const RouterConfig& c) {
  std::string s = routing_rule_name(c.rule);
  if (c.softmax_scores) s += " softmax-scored";
  if (c.renormalize) s += " renorm";
  if (c.renorm_floor > 0) s += " floor";
  if (c.n_group > 1) s += str_cat(" groups ", c.n_group, "/", c.topk_group);
  if (c.n_group > 1 && c.group_score_top != 2) s += str_cat(" group-score top", c.group_score_top);
  if (c.scores_from_selection) s += " masked-scores";
  if (c.routed_scaling != 1.f) s += str_cat(" scale ", c.routed_scaling);
  if (c.rule == RoutingRule::kSparseMixer) s += str_cat(" jitter ", c.jitter_eps);
  s += c.ties == TopKTies::kHigherIndexWins ? " ties-high" : " ties-low";
  return s;
}

RouterConfig qwen3_moe_router(int64_t experts, int64_t top_k, bool norm_topk_prob) {
  RouterConfig c = base(RoutingRule::kSoftmaxTopK, TopKTies::kHigherIndexWins, experts, top_k);
  c.renormalize = norm_topk_prob;
  return c;
}
RouterConfig olmoe_router(int64_t experts, int64_t top_k, bool norm_topk_prob) {
  RouterConfig c = base(RoutingRule::kSoftmaxTopK, TopKTies::kLowerIndexWins, experts, top_k);
  c.renormalize = norm_topk_prob;
  return c;
}
RouterConfig qwen2_moe_router(int64_t experts, int64_t top_k) {
  return base(RoutingRule::kSoftmaxTopK, TopKTies::kLowerIndexWins, experts, top_k);
}
RouterConfig mixtral_router(int64_t experts, int64_t top_k) {
  return base(RoutingRule::kTopKSoftmax, TopKTies::kLowerIndexWins, experts, top_k);
}
RouterConfig phimoe_router(int64_t experts, int64_t top_k, float jitter_eps) {
  // sparsemixer picks by argmax (first maximum wins), i.e. lower index on ties.
  RouterConfig c = base(RoutingRule::kSparseMixer, TopKTies::kLowerIndexWins, experts, top_k);
  c.jitter_eps = jitter_eps;
  return c;
}
RouterConfig lfm2_moe_router(int64_t experts, int64_t top_k, bool norm_topk_prob,
                             float routed_scaling, std::vector<float> expert_bias) {
  RouterConfig c = base(RoutingRule::kSigmoidBiasTopK, TopKTies::kHigherIndexWins, experts, top_k);
  c.renormalize = norm_topk_prob;
  c.routed_scaling = routed_scaling;
  c.expert_bias = std::move(expert_bias);
  return c;
}
RouterConfig topk_softmax_expert_scale_router(int64_t experts, int64_t top_k,
                                              std::vector<float> per_expert_scale) {
  RouterConfig c = base(RoutingRule::kTopKSoftmax, TopKTies::kHigherIndexWins, experts, top_k);
  c.expert_scale = std::move(per_expert_scale);
  return c;
}
RouterConfig minimax_router(int64_t experts, int64_t top_k, std::vector<float> expert_bias) {
  RouterConfig c = base(RoutingRule::kSigmoidBiasTopK, TopKTies::kLowerIndexWins, experts, top_k);
  c.renormalize = true;
  c.renorm_eps = 1e-20f;
  c.expert_bias = std::move(expert_bias);
  return c;
}
RouterConfig ernie4_5_moe_router(int64_t experts, int64_t top_k, bool sigmoid,
                                 bool selection_bias) {
  RouterConfig c = base(sigmoid || selection_bias ? RoutingRule::kSigmoidBiasTopK
                                                  : RoutingRule::kSoftmaxTopK,
                        TopKTies::kLowerIndexWins, experts, top_k);
  c.softmax_scores = !sigmoid && selection_bias;
  c.renormalize = true;
  c.renorm_eps = 0.f;
  c.renorm_floor = 1e-12f;
  return c;
}

RouterConfig bailing_moe_router(int64_t experts, int64_t top_k, bool softmax, bool norm_topk_prob,
                                float routed_scaling, std::vector<float> expert_bias,
                                int64_t n_group, int64_t topk_group) {
  RouterConfig c = base(RoutingRule::kSigmoidBiasTopK, TopKTies::kHigherIndexWins, experts, top_k);
  c.softmax_scores = softmax;
  c.renormalize = norm_topk_prob && top_k > 1;
  c.renorm_eps = 1e-20f;
  c.routed_scaling = routed_scaling;
  c.expert_bias = std::move(expert_bias);
  c.n_group = n_group;
  c.topk_group = topk_group;
  return c;
}

RouterConfig group_limited_sigmoid_router(int64_t experts, int64_t top_k, bool norm_topk_prob,
                                          float routed_scaling, std::vector<float> expert_bias,
                                          int64_t n_group, int64_t topk_group) {
  RouterConfig c = base(RoutingRule::kSigmoidBiasTopK, TopKTies::kLowerIndexWins, experts, top_k);
  c.renormalize = norm_topk_prob && top_k > 1;
  c.renorm_eps = 0.f;
  c.routed_scaling = routed_scaling;
  c.expert_bias = std::move(expert_bias);
  c.n_group = n_group;
  c.topk_group = topk_group;
  return c;
}
RouterConfig llama4_router(int64_t experts, int64_t top_k) {
  return base(RoutingRule::kSigmoidTop1ScalesInput, TopKTies::kLowerIndexWins, experts, top_k);
}

Router::Router(RouterConfig config) : config_(std::move(config)) {
  config_.validate();
  probs_.resize(config_.num_experts);
  keys_.resize(config_.num_experts);
  negated_.resize(config_.num_experts);
  order_.resize(config_.num_experts);
  group_neg_.resize(size_t(config_.n_group));
  group_scratch_.resize(size_t(config_.n_group));
  group_order_.resize(size_t(config_.n_group));
  group_ids_.resize(size_t(config_.n_group));
  top_scratch_.resize(size_t(config_.group_score_top));
}

void Router::route(const float* logits, int64_t tokens, int32_t* ids, float* scores) {
  const int64_t e = config_.num_experts, k = config_.top_k;
  for (int64_t m = 0; m < tokens; ++m) route_one(logits + m * e, ids + m * k, scores + m * k);
}

void Router::route_one(const float* l, int32_t* ids, float* scores) {
  const RouterConfig& c = config_;
  const int64_t e = c.num_experts, k = c.top_k;
  float* p = probs_.data();
  switch (c.rule) {
    case RoutingRule::kSoftmaxTopK: {
      // qwen3_moe / olmoe / qwen2_moe: softmax (precise) over all experts, top-k of it.
      for (int64_t i = 0; i < e; ++i) p[i] = l[i];
      softmax_inplace(p, e);
      mlx_topk(p, e, k, c.ties, order_.data(), negated_.data(), ids);
      float sum = 0.f;
      for (int64_t j = 0; j < k; ++j) sum += (scores[j] = p[ids[j]]);
      if (c.renormalize) {
        const float d = std::max(sum, c.renorm_floor);
        for (int64_t j = 0; j < k; ++j) scores[j] /= d;
      }
      return;
    }
    case RoutingRule::kTopKSoftmax: {
      // mixtral: top-k of the logits, softmax over the k gathered logits.
      mlx_topk(l, e, k, c.ties, order_.data(), negated_.data(), ids);
      for (int64_t j = 0; j < k; ++j) scores[j] = l[ids[j]];
      softmax_inplace(scores, k);
      if (!c.expert_scale.empty())  // gemma4_text: * per_expert_scale[id]
        for (int64_t j = 0; j < k; ++j) scores[j] *= c.expert_scale[size_t(ids[j])];
      return;
    }
    case RoutingRule::kSparseMixer:
      sparse_mixer_one(l, ids, scores);
      return;
    case RoutingRule::kSigmoidBiasTopK: {
      // lfm2_moe: sigmoid weights; bias added (in f32) for the selection only.
      if (c.softmax_scores) {
        for (int64_t i = 0; i < e; ++i) p[i] = l[i];
        softmax_inplace(p, e);
      } else {
        for (int64_t i = 0; i < e; ++i) p[i] = router_sigmoid(l[i]);
      }
      float* sel = keys_.data();
      for (int64_t i = 0; i < e; ++i) sel[i] = c.expert_bias.empty() ? p[i] : p[i] + c.expert_bias[i];
      if (c.n_group > 1) limit_groups(sel);
      mlx_topk(sel, e, k, c.ties, order_.data(), negated_.data(), ids);
      float sum = 0.f;
      const float* from = c.scores_from_selection ? sel : p;
      for (int64_t j = 0; j < k; ++j) sum += (scores[j] = from[ids[j]]);
      if (c.renormalize) {
        const float d = std::max(sum + c.renorm_eps, c.renorm_floor);
        for (int64_t j = 0; j < k; ++j) scores[j] /= d;
      }
      for (int64_t j = 0; j < k; ++j) scores[j] *= c.routed_scaling;
      return;
    }
    case RoutingRule::kSigmoidTop1ScalesInput: {
      // llama4: argpartition(-logits, kth=k-1)[:k]; score = sigmoid(logit) (f32).
      mlx_topk(l, e, k, c.ties, order_.data(), negated_.data(), ids);
      for (int64_t j = 0; j < k; ++j) scores[j] = router_sigmoid(l[ids[j]]);
      return;
    }
  }
}

// mlx-lm glm4_moe.group_expert_select's group step on the biased scores: a group's score is
// the sum of its group_score_top largest (two there; deepseek_v2's MoEGate takes the maximum);
// mx.argpartition(group_scores, kth=k-1)[:k] with k = n_group - topk_group picks the lowest
// groups (ties: the lower group index), whose scores become 0.
void Router::limit_groups(float* sel) {
  const RouterConfig& c = config_;
  const int64_t per = c.num_experts / c.n_group, drop = c.n_group - c.topk_group;
  const int64_t top = c.group_score_top;
  if (drop == 0) return;
  float* neg = group_neg_.data();
  float* best = top_scratch_.data();
  for (int64_t g = 0; g < c.n_group; ++g) {
    // The `top` largest of the group, largest first (a NaN counts as the largest, as in the
    // two-best form this replaces), kept by insertion.
    int64_t have = 0;
    for (int64_t i = g * per; i < (g + 1) * per; ++i) {
      const float v = sel[i];
      int64_t at = have;
      while (at > 0 && (v > best[at - 1] || std::isnan(v))) --at;
      if (at >= top) continue;
      for (int64_t j = std::min(have, top - 1); j > at; --j) best[j] = best[j - 1];
      best[at] = v;
      have = std::min(have + 1, top);
    }
    float sum = best[0];
    for (int64_t j = 1; j < top; ++j) sum += best[j];
    neg[g] = -sum;  // argpartition(x)[:k] of the lowest = top-k of -x, lower index first
  }
  mlx_topk(neg, c.n_group, drop, TopKTies::kLowerIndexWins, group_order_.data(),
           group_scratch_.data(), group_ids_.data());
  for (int64_t j = 0; j < drop; ++j)
    for (int64_t i = group_ids_[size_t(j)] * per; i < (group_ids_[size_t(j)] + 1) * per; ++i)
      sel[i] = 0.f;
}

// mlx-lm phimoe.sparsemixer, inference path, for one token.
void Router::sparse_mixer_one(const float* g, int32_t* ids, float* scores) {
  const RouterConfig& c = config_;
  const int64_t e = c.num_experts, k = c.top_k;
  const float ninf = -std::numeric_limits<float>::infinity();
  const float threshold = 2.f * c.jitter_eps;
  float* masked = keys_.data();
  float* band = probs_.data();
  for (int64_t i = 0; i < e; ++i) masked[i] = g[i];
  for (int64_t r = 0; r < k; ++r) {
    // top = max(masked); ind = argmax(masked) (the first maximum).
    int64_t ind = 0;
    for (int64_t i = 1; i < e; ++i)
      if (masked[i] > masked[ind]) ind = i;
    const float top = masked[ind];
    // band = where((top - gates) / max(|gates|, top) > 2 eps, -inf, masked)
    for (int64_t i = 0; i < e; ++i) {
      const float factor = std::max(std::fabs(g[i]), top);
      band[i] = (top - g[i]) / factor > threshold ? ninf : masked[i];
    }
    softmax_inplace(band, e);
    ids[r] = int32_t(ind);
    scores[r] = band[ind];
    masked[ind] = ninf;
  }
}

}  // namespace moex::moe
