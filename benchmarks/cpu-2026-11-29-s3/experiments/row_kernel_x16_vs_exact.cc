#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
#include "core/parallel.h"
#include "kernels/qdot.h"
#include "moe/synthetic_experts.h"
using namespace moex;
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main(int argc, char** argv) {
  const int threads = argc > 1 ? atoi(argv[1]) : 1;
  set_num_threads(threads);
  const int nl = 6;
  std::vector<std::unique_ptr<moe::SyntheticExperts>> L;
  for (int l = 0; l < nl; ++l) {
    moe::SyntheticExpertsArgs a; a.experts = 128; a.din = 2048; a.dff = 768; a.seed = l + 1;
    L.push_back(std::make_unique<moe::SyntheticExperts>(a));
  }
  const kernels::QdotKernel* K[2] = {&kernels::qdot_kernel(Isa::kAvx512, 4), &kernels::qdot_kernel_fused(Isa::kAvx512, 4)};
  std::vector<float> x(2048); for (auto& v : x) v = 0.1f;
  kernels::PreparedVectors px[2]; px[0].prepare(*K[0], x.data(), 1, 2048, 2048, 64); px[1].prepare(*K[1], x.data(), 1, 2048, 2048, 64);
  const bool down = getenv("DOWN") != nullptr;
  const int64_t rows = down ? 2048 : 768, kk = down ? 768 : 2048;
  const double bytes_per = double(rows * kk / 2 + 2 * rows * (kk / 64) * 2);
  std::vector<float> xd(768); for (auto& v : xd) v = 0.1f;
  if (down) { px[0].prepare(*K[0], xd.data(), 1, 768, 768, 64); px[1].prepare(*K[1], xd.data(), 1, 768, 768, 64); }
  std::mt19937 rng(1);
  std::vector<float> out(768 * 64);
  for (int cached = 0; cached < 2; ++cached) {
    std::vector<std::vector<double>> res(2);
    for (int round = 0; round < 21; ++round)
      for (int m = 0; m < 2; ++m) {
        const int calls = 48;
        std::vector<std::pair<int,int>> sel(calls);
        for (auto& s : sel) s = cached ? std::pair<int,int>{0, int(rng() % 2)} : std::pair<int,int>{int(rng() % nl), int(rng() % 128)};
        const double t0 = now();
        parallel_for(calls, [&](int64_t lo, int64_t hi) {
          for (int64_t c = lo; c < hi; ++c) {
            const auto& v = down ? L[sel[c].first]->view().down : L[sel[c].first]->view().gate;
            K[m]->dot_rows({&v, sel[c].second, 0, rows, px[m].at(0), out.data() + (c % 16) * 2048});
          }
        });
        res[m].push_back(bytes_per * calls / (now() - t0) / 1e9);
      }
    for (int m = 0; m < 2; ++m) { auto v = res[m]; std::sort(v.begin(), v.end()); std::printf("%s %-32s median %.1f  min %.1f max %.1f GB/s\n", cached ? "cache" : "dram ", K[m]->name, v[10], v[0], v[20]); }
  }
}
