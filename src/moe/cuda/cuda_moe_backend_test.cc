// The CUDA MoeBackend (label gpu) against the CPU backend on the same synthetic layer, both
// paths, one and several tokens; skipped, saying so, without a device.
#include "moe/cuda/cuda_moe_backend.h"

#include <gtest/gtest.h>

#include <vector>

#include "backend/cuda/device.h"
#include "kernels/kernels_test_util.h"
#include "moe/moe_block.h"
#include "moe/synthetic_experts.h"

namespace moex::moe {
namespace {

// The CUDA decode tests' gate for device vs host results (f32 sums in another order).
constexpr double kDeviceGate = 5e-3;


std::vector<float> run(const MoeBlock& block, const std::vector<float>& x, int64_t m,
                       const std::vector<int32_t>& ids, const std::vector<float>& scores, int k) {
  std::vector<float> out(x.size());
  MoeBlockCall c;
  c.x = x.data();
  c.tokens = m;
  c.expert_ids = ids.data();
  c.scores = scores.data();
  c.top_k = k;
  c.out = out.data();
  MoeWorkspace ws;
  block.run(c, ws, nullptr);
  return out;
}

TEST(CudaMoeBackend, MatchesTheCpuBackendOnBothPaths) {
  if (!cuda::device_available())
    GTEST_SKIP() << "skipped: no CUDA device (" << cuda::device_unavailable_reason() << ")";
  SyntheticExpertsArgs a;
  a.experts = 8;
  a.din = 256;
  a.dff = 128;
  const SyntheticExperts se(a);
  const int k = 2;
  for (int64_t m : {1, 3}) {
    std::vector<float> x(size_t(m * a.din));
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * float(i));
    std::vector<int32_t> ids;
    std::vector<float> scores;
    for (int64_t t = 0; t < m; ++t) {
      ids.insert(ids.end(), {int32_t((t * 3) % 8), int32_t((t * 5 + 1) % 8)});
      scores.insert(scores.end(), {0.6f, 0.4f});
    }
    for (const char* mode : {"on", "off"}) {
      MoePolicy p;
      RawFusedSettings raw;
      raw.flag_fused = mode;
      p.settings = resolve_fused_settings(raw);
      const MoeBlock cpu(MoeLayer{se.view()}, p);
      p.backend = &cuda_moe_backend();
      const MoeBlock gpu(MoeLayer{se.view()}, p);
      const std::vector<float> dev = run(gpu, x, m, ids, scores, k);
      const std::vector<float> host = run(cpu, x, m, ids, scores, k);
      EXPECT_LT(kernels::testing::nrms(dev.data(), host.data(), int64_t(dev.size())), kDeviceGate)
          << "tokens " << m << " --fused " << mode;
    }
  }
}

}  // namespace
}  // namespace moex::moe
