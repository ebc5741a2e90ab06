// place_experts as a table: --n-cpu-moe alone (N inside, at and past the layer count; dense
// layers first as in DeepSeek/GLM, interleaved as in Nemotron-H), --experts-on auto (all fit,
// none fits, the budget's edges, no device, N as a floor, the suffix rule), the host as the
// experts' backend, the equivalence of auto with --n-cpu-moe at its first device layer,
// malformed inputs, and the report line.
#include "moe/experts_placement.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace moex::moe {
namespace {

constexpr int64_t kG = int64_t{1} << 30;

// MoE layers `layers` of a model of n layers, each of `bytes`.
PlacementInputs model(int64_t n, std::vector<int64_t> layers, int64_t bytes = kG) {
  PlacementInputs in;
  in.num_layers = n;
  for (int64_t l : layers) in.moe_layers.push_back({l, bytes});
  return in;
}
PlacementInputs n_cpu(PlacementInputs in, int64_t n) {
  in.request.cpu_layers = n;
  return in;
}
PlacementInputs fit(PlacementInputs in, std::optional<int64_t> free, int64_t reserve) {
  in.request.fit = true;
  in.free_bytes = free;
  in.reserve_bytes = reserve;
  return in;
}

PlacementInputs host(PlacementInputs in) {
  in.host_only = true;
  return in;
}

// The indices of the layers placed on the device.
std::vector<int64_t> device_layers(const ExpertsPlacement& p) {
  std::vector<int64_t> out;
  for (size_t l = 0; l < p.on_device.size(); ++l)
    if (p.on_device[l]) out.push_back(int64_t(l));
  return out;
}

struct Case {
  const char* name;
  PlacementInputs in;
  std::vector<int64_t> device;  // layers expected on the device
  int64_t first_device_layer;
};

TEST(ExpertsPlacement, Table) {
  const PlacementInputs four = model(4, {0, 1, 2, 3});
  const PlacementInputs deepseek = model(6, {3, 4, 5});  // first_k_dense_replace = 3
  const PlacementInputs nemotron = model(7, {1, 4, 6});  // MoE blocks interleaved
  const std::vector<Case> cases = {
      {"no request: every layer on the device", four, {0, 1, 2, 3}, 0},
      {"--n-cpu-moe 2", n_cpu(four, 2), {2, 3}, 2},
      {"--n-cpu-moe 4 = the layer count", n_cpu(four, 4), {}, 4},
      {"--n-cpu-moe 1024 past the layer count", n_cpu(four, 1024), {}, 4},
      {"dense first: N within the dense layers moves nothing", n_cpu(deepseek, 2), {3, 4, 5}, 3},
      {"dense first: N counts model layers", n_cpu(deepseek, 4), {4, 5}, 4},
      {"interleaved: N between MoE layers", n_cpu(nemotron, 5), {6}, 6},
      {"interleaved: N on a MoE layer keeps it on the host", n_cpu(nemotron, 4), {4, 6}, 4},
      {"auto: everything fits", fit(four, 10 * kG, 6 * kG), {0, 1, 2, 3}, 0},
      {"auto: one byte short of all", fit(four, 10 * kG - 1, 6 * kG), {1, 2, 3}, 1},
      {"auto: room for exactly one", fit(four, 7 * kG, 6 * kG), {3}, 3},
      {"auto: one byte short of one", fit(four, 7 * kG - 1, 6 * kG), {}, 4},
      {"auto: the reserve exceeds the free memory", fit(four, 5 * kG, 6 * kG), {}, 4},
      {"auto: no device", fit(four, std::nullopt, 0), {}, 4},
      {"auto with --n-cpu-moe 2 as a floor", n_cpu(fit(four, 100 * kG, 0), 2), {2, 3}, 2},
      {"auto on dense-first layers", fit(deepseek, 3 * kG, kG), {4, 5}, 4},
      {"no MoE layers", fit(model(3, {}), 10 * kG, 0), {}, 3},
      {"the experts' backend is the host", host(four), {}, 4},
      {"the host with --n-cpu-moe 2", host(n_cpu(four, 2)), {}, 4},
      {"the host with auto", host(fit(four, 100 * kG, 0)), {}, 4},
  };
  for (const Case& c : cases) {
    const ExpertsPlacement p = place_experts(c.in);
    EXPECT_EQ(device_layers(p), c.device) << c.name;
    EXPECT_EQ(p.first_device_layer, c.first_device_layer) << c.name;
    EXPECT_EQ(p.device_layers, int64_t(c.device.size())) << c.name;
    EXPECT_EQ(p.host_layers, int64_t(c.in.moe_layers.size() - c.device.size())) << c.name;
    EXPECT_EQ(p.device_bytes, int64_t(c.device.size()) * kG) << c.name;
    EXPECT_EQ(p.on_device.size(), size_t(c.in.num_layers)) << c.name;
  }
}

// A large layer that does not fit ends the walk: the smaller layers before it stay on the
// host even though they would fit, so the device holds a suffix (an --n-cpu-moe set).
TEST(ExpertsPlacement, AutoPlacesASuffix) {
  PlacementInputs in = model(4, {0, 1, 2, 3});
  in.moe_layers[2].bytes = 50;
  for (MoeLayerBytes* m : {&in.moe_layers[0], &in.moe_layers[1], &in.moe_layers[3]}) m->bytes = 10;
  const ExpertsPlacement p = place_experts(fit(in, 25, 0));
  EXPECT_EQ(device_layers(p), std::vector<int64_t>{3});
  EXPECT_EQ(p.device_bytes, 10);
}

// For every budget, auto's set is --n-cpu-moe's at auto's first device layer, and that is the
// smallest N whose set fits the budget.
TEST(ExpertsPlacement, AutoIsTheSmallestFittingNCpuMoe) {
  PlacementInputs in = model(6, {1, 2, 4, 5});
  for (size_t i = 0; i < in.moe_layers.size(); ++i) in.moe_layers[i].bytes = int64_t(3 + i);
  for (int64_t budget = 0; budget <= 20; ++budget) {
    const ExpertsPlacement a = place_experts(fit(in, budget + 100, 100));
    const ExpertsPlacement n = place_experts(n_cpu(in, a.first_device_layer));
    EXPECT_EQ(a.on_device, n.on_device) << "budget " << budget;
    EXPECT_LE(a.device_bytes, budget);
    if (a.first_device_layer > 0) {  // one layer fewer on the host would not fit
      const ExpertsPlacement more = place_experts(n_cpu(in, a.first_device_layer - 1));
      EXPECT_TRUE(more.on_device == a.on_device || more.device_bytes > budget)
          << "budget " << budget;
    }
  }
}

TEST(ExpertsPlacement, MalformedInputsAreErrors) {
  const PlacementInputs four = model(4, {0, 1, 2, 3});
  EXPECT_THROW(place_experts(n_cpu(four, -1)), Error);
  EXPECT_THROW(place_experts(fit(four, 10, -1)), Error);
  EXPECT_THROW(place_experts(fit(four, -1, 0)), Error);
  EXPECT_THROW(place_experts(model(4, {1, 0})), Error);  // out of order
  EXPECT_THROW(place_experts(model(4, {2, 2})), Error);  // twice
  EXPECT_THROW(place_experts(model(4, {4})), Error);     // outside the model
  EXPECT_THROW(place_experts(model(4, {0}, 0)), Error);  // no bytes
}

TEST(ExpertsPlacement, ReportLine) {
  std::vector<int64_t> all48;
  for (int64_t i = 0; i < 48; ++i) all48.push_back(i);
  const PlacementInputs in = n_cpu(model(48, all48, kG + kG / 5), 12);
  EXPECT_EQ(describe_placement(place_experts(in), in, "cuda"),
            "experts: layers 0-11 on cpu, layers 12-47 on cuda (--n-cpu-moe 12; experts need 1.2 "
            "GiB/layer)");
  const PlacementInputs a = fit(model(6, {3, 4, 5}, 300 << 20), 70 * kG + kG / 10, 3 * kG);
  EXPECT_EQ(describe_placement(place_experts(a), a, "cuda"),
            "experts: layers 3-5 on cuda (--experts-on auto: free 70.1 GiB, reserve 3.0 GiB, "
            "experts need 300.0 MiB/layer)");
  const PlacementInputs none = fit(model(4, {1, 3}), std::nullopt, 0);
  EXPECT_EQ(describe_placement(place_experts(none), none, "cpu"),
            "experts: layers 1-3 on cpu (--experts-on auto: the experts' backend has no device "
            "memory)");
  PlacementInputs mixed = n_cpu(model(4, {1, 2, 3}), 2);
  mixed.moe_layers[2].bytes = 2 * kG;
  EXPECT_EQ(describe_placement(place_experts(mixed), mixed, "cuda"),
            "experts: layer 1 on cpu, layers 2-3 on cuda (--n-cpu-moe 2; experts need up to "
            "2.0 GiB/layer)");
  mixed.host_only = true;
  EXPECT_EQ(describe_placement(place_experts(mixed), mixed, "cpu"),
            "experts: layers 1-3 on cpu (--n-cpu-moe 2; experts need up to 2.0 GiB/layer)");
  EXPECT_EQ(describe_placement(place_experts(model(2, {})), model(2, {}), "cuda"),
            "experts: the model has no MoE layers");
}

}  // namespace
}  // namespace moex::moe
