// The whole engine on the CUDA backend (--backend cuda) against the CPU backend, on every
// family's tiny preset: the same prompt, then 8 greedy steps. Each step's greedy token must be
// the CPU engine's and its logits within a normalized RMS error of 1e-3 (the gate the f32
// parity tests hold moex to against mlx-lm); the measured errors are printed for the bound
// to be derived from them. Two placements: experts on the device, and experts on the host
// beside the device (--experts-on cpu). Label gpu: skipped without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "backend/cuda/cuda_model_backend.h"
#include "backend/cuda/cuda_test_cases.h"  // MOEX_REQUIRE_CUDA_DEVICE
#include "model/engine/engine.h"
#include "model/engine/engine_test_util.h"

namespace moex::model::engine {
namespace {

double normalized_rms_error(const float* ref, const float* got, int64_t n) {
  double err = 0, norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = double(got[i]) - double(ref[i]);
    err += d * d;
    norm += double(ref[i]) * double(ref[i]);
  }
  return std::sqrt(err / std::max(norm, 1e-30));
}

struct Placement {
  const char* name;
  moe::Backend experts;
};

class CudaEngine : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaEngine, GreedyTokensAndLogitsFollowTheCpuEngine) {
  MOEX_REQUIRE_CUDA_DEVICE();
  const std::string& dir = test::shared_tiny_family(GetParam());
  for (const Placement& p : {Placement{"experts on cuda", moe::Backend::kCuda},
                             Placement{"experts on cpu", moe::Backend::kCpu}}) {
    EngineOptions cpu_opt = test::options_for_fused("auto");
    EngineOptions dev_opt = cpu_opt;
    dev_opt.model_backend = &backend::cuda_backend();
    dev_opt.backend = p.experts;
    auto a = Engine::open(dir, cpu_opt);
    auto b = Engine::open(dir, dev_opt);
    const int64_t V = a->vocab();
    const std::vector<int32_t> prompt = test::prompt_of(13, 1, V);
    const float* la = a->prefill(prompt);
    const float* lb = b->prefill(prompt);
    double worst = 0;
    for (int step = 0; step <= 8; ++step) {
      const double e = normalized_rms_error(la, lb, V);
      worst = std::max(worst, e);
      EXPECT_LT(e, 1e-3) << p.name << ", step " << step;
      const int32_t ta = test::argmax(la, V), tb = test::argmax(lb, V);
      ASSERT_EQ(ta, tb) << p.name << ", step " << step << ": the greedy tokens differ";
      if (step == 8) break;
      la = a->decode(ta);
      lb = b->decode(tb);
    }
    std::printf("cuda engine %-22s %-16s worst normalized RMS error %.3g\n", GetParam(), p.name,
                worst);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, CudaEngine, test::tiny_families());

}  // namespace
}  // namespace moex::model::engine
