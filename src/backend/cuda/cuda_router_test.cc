// cuda::route against the CPU router of moe/router.h (mlx-lm's rules) for every family
// preset: the same set of experts per token and the same score for each expert (the CUDA
// router lists them best first, the CPU one in MLX's argpartition order; sparsemixer's
// round order is the same in both).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "core/error.h"
#include "backend/cuda/cuda_test_cases.h"
#include "backend/cuda/router.h"
#include "kernels/kernels_test_util.h"
#include "moe/router.h"

namespace moex::cuda {
namespace {

struct RouterCase {
  const char* name;
  moe::RouterConfig cfg;
};

std::vector<RouterCase> router_cases() {
  std::vector<float> bias(32);
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.01f * float(int(i % 7) - 3);
  return {
      {"qwen3_renorm", moe::qwen3_moe_router(128, 8, true)},
      {"olmoe", moe::olmoe_router(64, 8, false)},
      {"qwen2", moe::qwen2_moe_router(60, 4)},
      {"mixtral", moe::mixtral_router(8, 2)},
      {"phimoe", moe::phimoe_router(16, 2, 0.01f)},
      {"lfm2", moe::lfm2_moe_router(32, 4, true, 2.5f, bias)},
      {"llama4", moe::llama4_router(16, 1)},
  };
}

RoutingRule to_cuda(moe::RoutingRule r) {
  switch (r) {
    case moe::RoutingRule::kSoftmaxTopK: return RoutingRule::kSoftmaxTopK;
    case moe::RoutingRule::kTopKSoftmax: return RoutingRule::kTopKSoftmax;
    case moe::RoutingRule::kSparseMixer: return RoutingRule::kSparseMixer;
    case moe::RoutingRule::kSigmoidBiasTopK: return RoutingRule::kSigmoidBiasTopK;
    case moe::RoutingRule::kSigmoidTop1ScalesInput: return RoutingRule::kSigmoidTop1ScalesInput;
  }
  return RoutingRule::kSoftmaxTopK;
}

TEST(CudaRouter, MatchesCpuRouterForEveryFamily) {
  MOEX_REQUIRE_CUDA_DEVICE();
  const int64_t tokens = 9;
  for (const RouterCase& rc : router_cases()) {
    SCOPED_TRACE(rc.name);
    const moe::RouterConfig& cfg = rc.cfg;
    const int64_t e = cfg.num_experts, k = cfg.top_k;
    const std::vector<float> logits = kernels::testing::random_normal(tokens * e, 2.f, 77 + e);
    std::vector<int32_t> cpu_ids(size_t(tokens * k));
    std::vector<float> cpu_scores(size_t(tokens * k));
    moe::Router(cfg).route(logits.data(), tokens, cpu_ids.data(), cpu_scores.data());

    DeviceBuffer d_logits = to_device(logits), d_ids(size_t(tokens * k) * 4),
                 d_scores(size_t(tokens * k) * 4);
    DeviceBuffer d_bias = cfg.expert_bias.empty() ? DeviceBuffer() : to_device(cfg.expert_bias);
    RouterArgs a;
    a.rule = to_cuda(cfg.rule);
    a.higher_index_wins = cfg.ties == moe::TopKTies::kHigherIndexWins;
    a.num_experts = int(e);
    a.top_k = int(k);
    a.renormalize = cfg.renormalize;
    a.routed_scaling = cfg.routed_scaling;
    a.expert_bias = cfg.expert_bias.empty() ? nullptr : d_bias.as<float>();
    a.jitter_eps = cfg.jitter_eps;
    a.logits = d_logits.as<float>();
    a.tokens = tokens;
    a.ids = d_ids.as<int32_t>();
    a.scores = d_scores.as<float>();
    route(a);
    const std::vector<int32_t> ids = to_host<int32_t>(d_ids, size_t(tokens * k));
    const std::vector<float> scores = to_host<float>(d_scores, size_t(tokens * k));

    for (int64_t t = 0; t < tokens; ++t) {
      std::map<int32_t, float> cpu, gpu;
      for (int64_t j = 0; j < k; ++j) {
        cpu[cpu_ids[size_t(t * k + j)]] = cpu_scores[size_t(t * k + j)];
        gpu[ids[size_t(t * k + j)]] = scores[size_t(t * k + j)];
      }
      ASSERT_EQ(gpu.size(), size_t(k)) << "token " << t << ": repeated expert ids";
      for (const auto& [id, s] : cpu) {
        ASSERT_TRUE(gpu.count(id)) << "token " << t << ": CPU selected expert " << id;
        // Softmax sums in a different order and expf differs by an ulp or two: 32 ulps.
        EXPECT_NEAR(gpu[id], s, 32 * 1.2e-7 * std::fabs(s) + 1e-9)
            << "token " << t << " expert " << id;
      }
      if (cfg.rule == moe::RoutingRule::kSparseMixer) {
        for (int64_t j = 0; j < k; ++j) {
          EXPECT_EQ(ids[size_t(t * k + j)], cpu_ids[size_t(t * k + j)]) << "round " << j;
        }
      }
    }
  }
}

TEST(CudaRouter, TiesFollowTheConfiguredRule) {
  MOEX_REQUIRE_CUDA_DEVICE();
  // Experts 1, 2, 5 tie at the top; top-2 takes 5, 2 (higher wins) or 1, 2 (lower wins).
  const std::vector<float> logits = {0.f, 3.f, 3.f, -1.f, 1.f, 3.f};
  DeviceBuffer d_logits = to_device(logits), d_ids(8), d_scores(8);
  for (bool hi : {true, false}) {
    RouterArgs a;
    a.rule = RoutingRule::kTopKSoftmax;
    a.higher_index_wins = hi;
    a.num_experts = 6;
    a.top_k = 2;
    a.logits = d_logits.as<float>();
    a.tokens = 1;
    a.ids = d_ids.as<int32_t>();
    a.scores = d_scores.as<float>();
    route(a);
    std::vector<int32_t> ids = to_host<int32_t>(d_ids, 2);
    std::sort(ids.begin(), ids.end());
    EXPECT_EQ(ids, hi ? std::vector<int32_t>({2, 5}) : std::vector<int32_t>({1, 2}));
  }
}

}  // namespace
}  // namespace moex::cuda
