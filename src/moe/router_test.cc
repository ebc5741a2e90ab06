// Router tests: every family rule against values mlx-lm 0.32 (mlx 0.32.4, CPU) computes for
// the same logits, including ties at the top-k boundary (which index wins differs between
// argpartition(v, kth=-k) and argpartition(-v, kth=k-1)), renormalization and order.
#include "moe/router.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"

namespace moex::moe {
namespace {

// Two tokens, E = 8. Row 0 ties 3.0 at {1,7} and 2.0 at {2,3,5}; row 1 ties 1.5 at {2,4}.
const std::vector<float> kLogits = {1.0f,  3.0f,  2.0f, 2.0f,  0.5f, 2.0f,  -1.0f, 3.0f,
                                    0.25f, -0.5f, 1.5f, 0.75f, 1.5f, -2.0f, 0.0f,  1.0f};

struct Routed {
  std::vector<int32_t> ids;
  std::vector<float> scores;
};

Routed route(const RouterConfig& c, const std::vector<float>& logits) {
  Router r(c);
  const int64_t m = int64_t(logits.size()) / c.num_experts;
  Routed out{std::vector<int32_t>(m * c.top_k), std::vector<float>(m * c.top_k)};
  r.route(logits.data(), m, out.ids.data(), out.scores.data());
  return out;
}

// Scores agree with MLX's to a few f32 ulps (summation order inside softmax may differ).
void expect_scores(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 4 * std::abs(want[i]) * 1.2e-7) << "score " << i;
}

TEST(Router, Qwen3SoftmaxTopKRenormHigherIndexWinsTies) {
  Routed r = route(qwen3_moe_router(8, 3, true), kLogits);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{5, 1, 7, 7, 4, 2}));
  expect_scores(r.scores, {0.15536239743232727, 0.4223187565803528, 0.4223187565803528,
                           0.232696533203125, 0.3836517333984375, 0.3836517333984375});
}

TEST(Router, Qwen3WithoutRenormKeepsSoftmaxProbabilities) {
  Routed r = route(qwen3_moe_router(8, 3, false), kLogits);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{5, 1, 7, 7, 4, 2}));
  expect_scores(r.scores, {0.11016418039798737, 0.29945728182792664, 0.29945728182792664,
                           0.1615663766860962, 0.26637792587280273, 0.26637792587280273});
}

TEST(Router, OlmoeNoRenormLowerIndexWinsTies) {
  Routed r = route(olmoe_router(8, 3, false), kLogits);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{7, 1, 2, 2, 4, 7}));
  expect_scores(r.scores, {0.29945728182792664, 0.29945728182792664, 0.11016418039798737,
                           0.26637792587280273, 0.26637792587280273, 0.1615663766860962});
}

TEST(Router, OlmoeRenormAndQwen2MoeNeverRenorms) {
  Routed r = route(olmoe_router(8, 3, true), kLogits);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{7, 1, 2, 2, 4, 7}));
  expect_scores(r.scores, {0.42231881618499756, 0.42231881618499756, 0.15536241233348846,
                           0.3836517333984375, 0.3836517333984375, 0.232696533203125});
  Routed q = route(qwen2_moe_router(8, 3), kLogits);
  EXPECT_EQ(q.ids, (std::vector<int32_t>{7, 1, 2, 2, 4, 7}));
  float sum0 = q.scores[0] + q.scores[1] + q.scores[2];
  EXPECT_LT(sum0, 0.75f);  // not renormalized: 0.2995 + 0.2995 + 0.1102
}

TEST(Router, MixtralSoftmaxOverTopKLogits) {
  Routed r = route(mixtral_router(8, 3), kLogits);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{7, 1, 2, 2, 4, 7}));
  expect_scores(r.scores, {0.42231881618499756, 0.42231881618499756, 0.15536241233348846,
                           0.3836517333984375, 0.3836517333984375, 0.2326965481042862});
}

TEST(Router, Llama4Top1SigmoidScalesInput) {
  Routed r = route(llama4_router(8, 1), kLogits);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{1, 2}));  // ties 3.0 at {1,7} and 1.5 at {2,4}
  expect_scores(r.scores, {0.9525741338729858, 0.8175745010375977});
  EXPECT_FALSE(llama4_router(8, 1).scores_scale_output());
  EXPECT_THROW(Router(llama4_router(8, 2)), Error);
}

TEST(Router, Lfm2BiasSelectsButScoresAreUnbiasedSigmoidRenormScaled) {
  const std::vector<float> bias = {0.0f, -0.5f, 0.3f, 0.0f, 0.9f, 0.0f, 0.0f, -0.2f};
  Routed r = route(lfm2_moe_router(8, 3, true, 2.5f, bias), kLogits);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{5, 4, 2, 3, 2, 4}));
  expect_scores(r.scores, {0.9236335754394531, 0.6527317762374878, 0.9236335754394531,
                           0.7336670756340027, 0.8831659555435181, 0.8831659555435181});
  Routed n = route(lfm2_moe_router(8, 3, false, 1.0f, {}), kLogits);
  EXPECT_EQ(n.ids, (std::vector<int32_t>{5, 1, 7, 7, 4, 2}));
  expect_scores(n.scores, {0.8807970881462097, 0.9525741338729858, 0.9525741338729858,
                           0.7310585975646973, 0.8175745010375977, 0.8175745010375977});
}

// glm4_moe (mlx-lm group_expert_select, same logits and bias): groups ranked by the sum of
// their two best biased scores, the worst zeroed, ties to the lower index, no eps in the
// renormalization, none at all for k = 1.
TEST(Router, Glm4GroupLimitedSigmoidWithCorrectionBias) {
  const std::vector<float> bias = {0.0f, -0.5f, 0.3f, 0.0f, 0.9f, 0.0f, 0.0f, -0.2f};
  Routed a = route(group_limited_sigmoid_router(8, 3, true, 2.5f, bias, 2, 1), kLogits);
  EXPECT_EQ(a.ids, (std::vector<int32_t>{4, 5, 7, 7, 4, 6}));
  expect_scores(a.scores, {0.6336545348167419, 0.8966386914253235, 0.9697067141532898,
                           0.8921297788619995, 0.9977073073387146, 0.6101629734039307});
  Routed b = route(group_limited_sigmoid_router(8, 3, true, 1.0f, bias, 4, 2), kLogits);
  EXPECT_EQ(b.ids, (std::vector<int32_t>{2, 4, 3, 2, 4, 3}));
  expect_scores(b.scores, {0.3694535791873932, 0.2610928416252136, 0.3694535791873932,
                           0.35326650738716125, 0.35326650738716125, 0.2934669554233551});
  Routed c = route(group_limited_sigmoid_router(8, 3, false, 1.0f, bias, 1, 1), kLogits);
  EXPECT_EQ(c.ids, (std::vector<int32_t>{2, 4, 3, 2, 4, 3}));
  expect_scores(c.scores, {0.8807970881462097, 0.6224592924118042, 0.8807970881462097,
                           0.8175745010375977, 0.8175745010375977, 0.6791787147521973});
  Routed d = route(group_limited_sigmoid_router(8, 1, true, 2.5f, bias, 4, 3), kLogits);
  EXPECT_EQ(d.ids, (std::vector<int32_t>{4, 4}));
  expect_scores(d.scores, {1.5561482906341553, 2.043936252593994});
  // Groups must split the experts evenly, keep at most n_group, and hold top_k.
  EXPECT_THROW(Router(group_limited_sigmoid_router(8, 3, true, 1.0f, bias, 3, 1)), Error);
  EXPECT_THROW(Router(group_limited_sigmoid_router(8, 3, true, 1.0f, bias, 2, 3)), Error);
  EXPECT_THROW(Router(group_limited_sigmoid_router(8, 5, true, 1.0f, bias, 2, 1)), Error);
  EXPECT_THROW(Router(group_limited_sigmoid_router(8, 1, true, 1.0f, bias, 8, 1)), Error);
}

// A group's score from its single best expert (group_score_top = 1) as deepseek_v2's MoEGate
// computes it (mlx-lm 0.32.2, mlx 0.32.4, CPU; the gate weight the identity, so these are its
// logits): softmax over all experts, groups ranked by their maximum (the lowest zeroed, ties
// to the lower group), top-k with ties to the lower index, no renormalization, times the
// scaling. Row 2 keeps group 0 by its maximum (4.0 against 3.5) where the sum of the two best
// keeps group 1 (e^3.5 + e^3.4 > e^4 + e^-3). The k scores come from the masked scores.
TEST(Router, GroupScoreFromTheMaximumSoftmaxNoRenorm) {
  std::vector<float> logits = kLogits;
  for (float v : {4.0f, -3.0f, -3.0f, -3.0f, 3.5f, 3.4f, 0.0f, 0.0f}) logits.push_back(v);
  auto v2 = [](int64_t k, int64_t n_group, int64_t topk_group, float scaling) {
    RouterConfig c;
    c.rule = RoutingRule::kSigmoidBiasTopK;
    c.ties = TopKTies::kLowerIndexWins;
    c.softmax_scores = true;
    c.num_experts = 8, c.top_k = k, c.n_group = n_group, c.topk_group = topk_group;
    c.group_score_top = 1;
    c.scores_from_selection = true;
    c.routed_scaling = scaling;
    return c;
  };
  Routed a = route(v2(3, 2, 1, 1.5f), logits);
  EXPECT_EQ(a.ids, (std::vector<int32_t>{7, 5, 4, 7, 4, 6, 1, 0, 2}));
  expect_scores(a.scores, {0.44918590784072876, 0.16524627804756165, 0.036871425807476044,
                           0.2423495650291443, 0.3995668888092041, 0.08915543556213379,
                           0.000623236526735127, 0.6834619641304016, 0.000623236526735127});
  Routed b = route(v2(3, 4, 2, 1.0f), logits);
  EXPECT_EQ(b.ids, (std::vector<int32_t>{7, 1, 0, 4, 2, 3, 4, 0, 5}));
  expect_scores(b.scores, {0.29945728182792664, 0.29945728182792664, 0.040527135133743286,
                           0.26637792587280273, 0.26637792587280273, 0.12582802772521973,
                           0.276360422372818, 0.4556412994861603, 0.2500612735748291});
  Routed c = route(v2(3, 1, 1, 1.0f), logits);  // "greedy": no groups
  EXPECT_EQ(c.ids, (std::vector<int32_t>{7, 1, 2, 2, 4, 7, 4, 0, 5}));
  expect_scores(c.scores, {0.29945728182792664, 0.29945728182792664, 0.11016418039798737,
                           0.26637792587280273, 0.26637792587280273, 0.1615663766860962,
                           0.276360422372818, 0.4556412994861603, 0.2500612735748291});
  Routed d = route(v2(1, 2, 1, 1.0f), logits);
  EXPECT_EQ(d.ids, (std::vector<int32_t>{7, 4, 0}));
  expect_scores(d.scores, {0.29945728182792664, 0.26637792587280273, 0.4556412994861603});
  // The sum of the two best ranks row 2's groups the other way round.
  RouterConfig sum2 = v2(3, 2, 1, 1.5f);
  sum2.group_score_top = 2;
  Routed e = route(sum2, logits);
  std::vector<int32_t> row2(e.ids.begin() + 6, e.ids.end());
  std::sort(row2.begin(), row2.end());
  EXPECT_EQ(row2, (std::vector<int32_t>{4, 5, 6}));
  // Group 0 zeroed (best 0.196 < 0.216), group 1 holding exact zeros: the second and third
  // picks are experts 0 and 1 of the zeroed group (ties to the lower index) and score 0 as
  // mlx-lm gathers them from the masked scores, not their softmax 0.196.
  const std::vector<float> masked = {9.9f, 9.9f, 9.9f, 9.9f, 10.0f, -200.0f, -200.0f, -200.0f};
  Routed f = route(v2(3, 2, 1, 1.0f), masked);
  EXPECT_EQ(f.ids, (std::vector<int32_t>{4, 0, 1}));
  expect_scores(f.scores, {0.21648074686527252, 0.0, 0.0});
  RouterConfig unmasked = v2(3, 2, 1, 1.0f);
  unmasked.scores_from_selection = false;
  EXPECT_NEAR(route(unmasked, masked).scores[1], 0.19587980210781097, 1e-6);
  RouterConfig with_bias = v2(3, 2, 1, 1.0f);
  with_bias.expert_bias.assign(8, 0.f);
  EXPECT_THROW(Router{with_bias}, Error);
  // The group score counts at most a group's experts, and at least one.
  RouterConfig wide = v2(1, 4, 2, 1.0f);
  wide.group_score_top = 3;
  EXPECT_THROW(Router{wide}, Error);
  wide.group_score_top = 0;
  EXPECT_THROW(Router{wide}, Error);
  EXPECT_NE(router_summary(v2(3, 2, 1, 1.5f)).find("group-score top1"), std::string::npos);
}

// ernie4_5_moe (mlx-lm Ernie4_5_MoeMLP, same logits): softmax or sigmoid over all experts, top-k
// with ties to the lower index, divided by max(sum, 1e-12). With every sigmoid underflowed to
// 0 the floor keeps the scores 0 where a plain division would give NaN.
TEST(Router, ErnieSoftmaxOrSigmoidRenormalizedWithFloor) {
  Routed a = route(ernie4_5_moe_router(8, 3, false), kLogits);
  EXPECT_EQ(a.ids, (std::vector<int32_t>{7, 1, 2, 2, 4, 7}));
  expect_scores(a.scores, {0.42231881618499756, 0.42231881618499756, 0.15536241233348846,
                           0.3836517333984375, 0.3836517333984375, 0.232696533203125});
  Routed b = route(ernie4_5_moe_router(8, 3, true), kLogits);
  EXPECT_EQ(b.ids, (std::vector<int32_t>{7, 1, 2, 2, 4, 7}));
  expect_scores(b.scores, {0.341921329498291, 0.341921329498291, 0.31615734100341797,
                           0.3455210328102112, 0.3455210328102112, 0.30895793437957764});
  Routed c = route(ernie4_5_moe_router(8, 3, true), std::vector<float>(8, -200.f));
  EXPECT_EQ(c.ids, (std::vector<int32_t>{1, 0, 2}));
  for (float v : c.scores) EXPECT_EQ(v, 0.f);
}

// ernie4_5_moe with the correction bias (the Hugging Face model's moe_statics, which the GGUF
// mapping of llama.cpp's exp_probs_b asks for): a zero bias routes as the plain softmax router,
// bit for bit; a bias moves the selection while the kept scores stay the unbiased softmax
// values, renormalized over the chosen experts.
TEST(Router, ErnieSelectionBiasPicksByBiasKeepsSoftmaxScores) {
  const Routed plain = route(ernie4_5_moe_router(8, 3, false), kLogits);
  RouterConfig zero = ernie4_5_moe_router(8, 3, false, true);
  zero.expert_bias.assign(8, 0.f);
  const Routed z = route(zero, kLogits);
  EXPECT_EQ(z.ids, plain.ids);
  EXPECT_EQ(z.scores, plain.scores);
  RouterConfig biased = ernie4_5_moe_router(8, 3, false, true);
  biased.expert_bias = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 1.f, -1.f};  // 6 always in, 7 never
  const Routed b = route(biased, kLogits);
  for (size_t t = 0; t < 2; ++t) {
    std::vector<int32_t> ids(b.ids.begin() + long(3 * t), b.ids.begin() + long(3 * t + 3));
    EXPECT_NE(std::find(ids.begin(), ids.end(), 6), ids.end()) << t;
    EXPECT_EQ(std::find(ids.begin(), ids.end(), 7), ids.end()) << t;
    float sum = 0.f;
    for (size_t j = 0; j < 3; ++j) sum += b.scores[3 * t + j];
    EXPECT_NEAR(sum, 1.f, 1e-6f) << t;
  }
  RouterConfig sig = ernie4_5_moe_router(8, 3, true, true);
  EXPECT_FALSE(sig.softmax_scores);
}

// bailing_moe (mlx-lm group_expert_select in bailing_moe.py, same logits and bias): softmax or
// sigmoid scores, groups zeroed like glm4_moe, ties to the HIGHER index, scaled always.
TEST(Router, BailingSoftmaxOrSigmoidGroupLimitedHigherIndexWinsTies) {
  const std::vector<float> bias = {0.0f, -0.5f, 0.3f, 0.0f, 0.9f, 0.0f, 0.0f, -0.2f};
  Routed a = route(bailing_moe_router(8, 3, true, true, 1.0f, {}, 1, 1), kLogits);
  EXPECT_EQ(a.ids, (std::vector<int32_t>{5, 1, 7, 7, 4, 2}));
  expect_scores(a.scores, {0.15536239743232727, 0.4223187565803528, 0.4223187565803528,
                           0.232696533203125, 0.3836517333984375, 0.3836517333984375});
  Routed b = route(bailing_moe_router(8, 3, false, true, 2.5f, bias, 2, 1), kLogits);
  EXPECT_EQ(b.ids, (std::vector<int32_t>{7, 5, 4, 6, 7, 4}));
  expect_scores(b.scores, {0.9697067141532898, 0.8966386914253235, 0.6336545348167419,
                           0.6101629734039307, 0.8921297788619995, 0.9977073073387146});
  Routed c = route(bailing_moe_router(8, 3, true, false, 1.0f, bias, 4, 2), kLogits);
  EXPECT_EQ(c.ids, (std::vector<int32_t>{5, 4, 2, 3, 4, 2}));
  expect_scores(c.scores, {0.11016418039798737, 0.024580949917435646, 0.11016418039798737,
                           0.12582802772521973, 0.26637792587280273, 0.26637792587280273});
  Routed d = route(bailing_moe_router(8, 1, false, true, 2.5f, {}, 1, 1), kLogits);
  EXPECT_EQ(d.ids, (std::vector<int32_t>{7, 4}));
  expect_scores(d.scores, {2.3814353942871094, 2.043936252593994});
}

// gemma4_text (mlx-lm Router, same logits, per_expert_scale below): argpartition(l, kth=-k)[-k:]
// (ties to the higher index), softmax over the k logits, times per_expert_scale[id]; values
// from mlx 0.32 on this machine.
TEST(Router, Gemma4TopKSoftmaxTimesPerExpertScale) {
  const std::vector<float> scale = {1.0f, 0.5f, 1.25f, 2.0f, 0.75f, 1.5f, 0.9f, 1.1f};
  Routed a = route(topk_softmax_expert_scale_router(8, 3, scale), kLogits);
  EXPECT_EQ(a.ids, (std::vector<int32_t>{5, 1, 7, 7, 4, 2}));
  expect_scores(a.scores, {0.2330436110496521, 0.21115940809249878, 0.4645507037639618,
                           0.2559662163257599, 0.2877388000488281, 0.4795646667480469});
  Routed b = route(topk_softmax_expert_scale_router(8, 1, scale), kLogits);
  EXPECT_EQ(b.ids, (std::vector<int32_t>{7, 4}));
  expect_scores(b.scores, {1.100000023841858, 0.75});
  EXPECT_THROW(Router(topk_softmax_expert_scale_router(8, 2, {1.f, 2.f})), Error);
}

// minimax (mlx-lm MiniMaxSparseMoeBlock, same logits and bias): always renormalized, so a
// single expert scores exactly 1 (glm4_moe's rule leaves it unnormalized).
TEST(Router, MinimaxSigmoidBiasAlwaysRenormalized) {
  const std::vector<float> bias = {0.0f, -0.5f, 0.3f, 0.0f, 0.9f, 0.0f, 0.0f, -0.2f};
  Routed a = route(minimax_router(8, 3, bias), kLogits);
  EXPECT_EQ(a.ids, (std::vector<int32_t>{2, 4, 3, 2, 4, 3}));
  expect_scores(a.scores, {0.3694535791873932, 0.2610928416252136, 0.3694535791873932,
                           0.35326650738716125, 0.35326650738716125, 0.2934669554233551});
  Routed b = route(minimax_router(8, 1, bias), kLogits);
  EXPECT_EQ(b.ids, (std::vector<int32_t>{4, 4}));
  expect_scores(b.scores, {1.0, 1.0});
}

TEST(Router, PhimoeSparseMixerJitterBand) {
  // Row 0: three logits within the 2*eps relative band of the top; row 1: all negative.
  const std::vector<float> p = {2.0f,  1.99f, 0.5f,  1.97f, -3.0f,  1.0f,  1.995f, 0.0f,
                                -1.0f, -1.0f, -0.9f, -2.0f, -0.95f, -1.5f, -0.99f, -3.0f};
  Routed r = route(phimoe_router(8, 2, 0.01f), p);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{0, 6, 2, 4}));
  expect_scores(r.scores, {0.2528120279312134, 0.33666378259658813, 1.0, 1.0});
  Routed t = route(phimoe_router(8, 2, 0.01f), kLogits);  // argmax: first maximum wins
  EXPECT_EQ(t.ids, (std::vector<int32_t>{1, 7, 2, 4}));
  expect_scores(t.scores, {0.5, 1.0, 0.5, 1.0});
}

TEST(Router, ArgpartitionOrderMatchesMlxOnManyTies) {
  // l[i] = ((37 i) mod 17 - 8) / 4: 2.0 at {11,28,45,62}, 1.75 at {5,22,39,56}; k = 6.
  std::vector<float> l(64);
  for (int i = 0; i < 64; ++i) l[i] = float((i * 37) % 17 - 8) * 0.25f;
  EXPECT_EQ(route(qwen3_moe_router(64, 6, true), l).ids,
            (std::vector<int32_t>{39, 56, 11, 28, 62, 45}));
  EXPECT_EQ(route(olmoe_router(64, 6, false), l).ids,
            (std::vector<int32_t>{62, 11, 28, 45, 5, 22}));
  EXPECT_EQ(route(mixtral_router(64, 6), l).ids, (std::vector<int32_t>{62, 11, 28, 45, 5, 22}));
}

TEST(Router, SelectionIsDistinctAndRenormSumsToOne) {
  std::vector<float> l(3 * 128);
  for (size_t i = 0; i < l.size(); ++i) l[i] = std::sin(0.7f * float(i)) * 3.0f;
  Routed r = route(qwen3_moe_router(128, 8, true), l);
  for (int m = 0; m < 3; ++m) {
    float sum = 0;
    for (int a = 0; a < 8; ++a) {
      sum += r.scores[m * 8 + a];
      for (int b = a + 1; b < 8; ++b) EXPECT_NE(r.ids[m * 8 + a], r.ids[m * 8 + b]);
    }
    EXPECT_NEAR(sum, 1.0f, 8 * 1.2e-7);
  }
}

TEST(Router, InvalidConfigsAreErrors) {
  EXPECT_THROW(Router(qwen3_moe_router(8, 0, true)), Error);
  EXPECT_THROW(Router(qwen3_moe_router(8, 9, true)), Error);
  EXPECT_THROW(Router(lfm2_moe_router(8, 2, true, 1.0f, std::vector<float>(7))), Error);
  RouterConfig c = mixtral_router(8, 2);
  c.expert_bias.assign(8, 0.0f);
  EXPECT_THROW(Router{c}, Error);
}

}  // namespace
}  // namespace moex::moe
