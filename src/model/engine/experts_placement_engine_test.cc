// The engine with its MoE layers split between two backends (--n-cpu-moe, --experts-on auto):
// the layers placed on the "device" run on a counting MoE backend (the CPU's paths behind a
// backend of another kind), optionally with the whole model on the foreign-memory checking
// backend (--backend cuda's shape); the logits equal the all-CPU engine's bit for bit, and
// exactly the placed layers went through each backend. Families with dense layers first
// (DeepSeek-V3, Qwen3-MoE's mlp_only_layers) and interleaved (Nemotron-H) included.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/foreign_backend_test_util.h"
#include "model/engine/engine.h"
#include "model/engine/engine_test_util.h"
#include "moe/counting_moe_backend_test_util.h"

namespace moex::model::engine {
namespace {

using test::argmax;
using test::prompt_of;

// A prefill, greedy decode steps and one batched step of two sequences: every result of `b`
// equals `a`'s bit for bit.
void expect_same_run(Engine& a, Engine& b) {
  const int64_t V = a.vocab();
  auto same = [&](const float* la, const float* lb, int64_t n, const std::string& what) {
    ASSERT_EQ(std::memcmp(la, lb, size_t(n) * sizeof(float)), 0) << what;
  };
  const std::vector<int32_t> prompt = prompt_of(11, 1, V);
  const float* la = a.prefill(prompt);
  same(la, b.prefill(prompt), V, "prefill");
  int32_t tok = argmax(la, V);
  for (int step = 0; step < 4; ++step) {
    la = a.decode(tok);
    same(la, b.decode(tok), V, "decode step " + std::to_string(step));
    tok = argmax(la, V);
  }
  std::unique_ptr<Sequence> sa[2] = {a.new_sequence(), a.new_sequence()};
  std::unique_ptr<Sequence> sb[2] = {b.new_sequence(), b.new_sequence()};
  int32_t next[2];
  for (int i = 0; i < 2; ++i) {
    const std::vector<int32_t> p = prompt_of(5 + 3 * i, 2 + i, V);
    la = a.forward(*sa[i], p.data(), int64_t(p.size()));
    same(la, b.forward(*sb[i], p.data(), int64_t(p.size())), V, "prefill of a sequence");
    next[i] = argmax(la, V);
  }
  Sequence* ra[2] = {sa[0].get(), sa[1].get()};
  Sequence* rb[2] = {sb[0].get(), sb[1].get()};
  la = a.decode_batch(ra, next, 2);
  same(la, b.decode_batch(rb, next, 2), 2 * V, "batched decode step");
}

// The MoE layers of e, in order.
std::vector<int64_t> moe_layers(const Engine& e) {
  std::vector<int64_t> out;
  for (const moe::MoeLayerBytes& m : e.experts_placement_inputs().moe_layers)
    out.push_back(m.layer);
  return out;
}

// Every MoE layer of e below `first_device` ran on the CPU MoE backend and never touched
// `device`; every other one ran on `device` (prepared once, called at least once).
void expect_layers_on(const Engine& e, const moe::CountingMoeBackend& device,
                      int64_t first_device) {
  for (int64_t l : moe_layers(e)) {
    const kernels::MoeExpertsView& ex = e.weights().layers[size_t(l)].moe.experts;
    if (l < first_device) {
      EXPECT_EQ(&e.experts_backend(l), &moe::cpu_moe_backend()) << "layer " << l;
      EXPECT_EQ(device.prepares_for(ex), 0) << "layer " << l;
      EXPECT_EQ(device.calls_for(ex), 0) << "layer " << l;
    } else {
      EXPECT_EQ(&e.experts_backend(l), &device) << "layer " << l;
      EXPECT_EQ(device.prepares_for(ex), 1) << "layer " << l;
      EXPECT_GT(device.calls_for(ex), 0) << "layer " << l;
    }
  }
}

struct SplitCase {
  const char* preset;
  int64_t n_cpu_moe;     // the MoE layers below it stay on the host
  int64_t first_device;  // the first MoE layer from n_cpu_moe on
  const char* line;      // what open() prints
};

class ExpertsSplit : public ::testing::TestWithParam<SplitCase> {};

// --n-cpu-moe N with the model on the host (--backend cpu --experts-on cuda's shape) and on
// the foreign-memory backend (--backend cuda's).
TEST_P(ExpertsSplit, NCpuMoeKeepsTheFirstLayersOnTheHostWithTheSameLogits) {
  const SplitCase& c = GetParam();
  const std::string& dir = test::shared_tiny_family(c.preset);
  static const backend::conformance::ForeignMemoryBackend foreign;
  for (const backend::ModelBackend* model :
       {(const backend::ModelBackend*)nullptr, (const backend::ModelBackend*)&foreign}) {
    SCOPED_TRACE(model ? "model on the foreign-memory backend" : "model on the CPU");
    const moe::CountingMoeBackend device;
    EngineOptions cpu_opt = test::options_for_fused("on");
    cpu_opt.model_backend = model;
    EngineOptions split = cpu_opt;
    split.experts_backend = &device;
    split.experts_placement.cpu_layers = c.n_cpu_moe;
    // Each side's policy reads its own backend's calibrated cap.
    split.calibration = moe::CalibratedCap{777, "device calibration", "", true};
    split.host_calibration = moe::CalibratedCap{1234, "host calibration", "", true};
    auto a = Engine::open(dir, cpu_opt);
    ::testing::internal::CaptureStderr();
    auto b = Engine::open(dir, split);
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find(c.line), std::string::npos) << err;
    EXPECT_EQ(b->experts_placement().first_device_layer, c.first_device);
    EXPECT_GT(b->experts_placement().host_layers, 0);
    EXPECT_GT(b->experts_placement().device_layers, 0);
    expect_same_run(*a, *b);
    expect_layers_on(*b, device, c.first_device);
    for (const Engine::LayerDecision& d : b->decode_decisions())
      EXPECT_EQ(d.routed.cap, d.layer < c.first_device ? 1234 : 777) << "layer " << d.layer;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Families, ExpertsSplit,
    ::testing::Values(
        SplitCase{"tiny-deepseek-v3", 2, 2, "moex: experts: layer 1 on cpu, layers 2-3 on cuda"},
        SplitCase{"tiny-qwen3-moe", 2, 2, "moex: experts: layer 1 on cpu, layer 2 on cuda"},
        SplitCase{"tiny-nemotron-h", 2, 4, "moex: experts: layer 1 on cpu, layer 4 on cuda"}),
    [](const auto& info) {
      std::string n = info.param.preset;
      for (char& ch : n)
        if (ch == '-') ch = '_';
      return n;
    });

// --experts-on auto with the whole model on the foreign-memory backend: the reserve counts the
// non-expert weights, KV caches and activations beside the margin; a free figure leaving room
// for the last MoE layer only puts that one on the device, none leaves every layer on the
// host, plenty puts them all there; the logits stay the CPU's.
TEST(ExpertsAuto, FitsTheLastLayersIntoTheFreeMemoryAfterTheReserve) {
  const std::string& dir = test::shared_tiny_family("tiny-deepseek-v3");
  static const backend::conformance::ForeignMemoryBackend foreign;
  EngineOptions cpu_opt = test::options_for_fused("on");
  auto a = Engine::open(dir, cpu_opt);
  EngineOptions opt = cpu_opt;
  opt.model_backend = &foreign;
  opt.experts_placement.fit = true;

  const moe::CountingMoeBackend plenty(true, int64_t{1} << 40);
  opt.experts_backend = &plenty;
  auto all = Engine::open(dir, opt);
  const moe::PlacementInputs& in = all->experts_placement_inputs();
  ASSERT_EQ(moe_layers(*all), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_GT(in.reserve_bytes, moe::kDeviceMarginBytes + all->kv_cache_bytes());
  EXPECT_EQ(all->experts_placement().device_layers, 3);
  expect_same_run(*a, *all);
  expect_layers_on(*all, plenty, 1);

  a->reset();
  const int64_t last = in.moe_layers.back().bytes;
  const moe::CountingMoeBackend one(true, in.reserve_bytes + last + last / 2);
  opt.experts_backend = &one;
  auto b = Engine::open(dir, opt);
  EXPECT_EQ(b->experts_placement_inputs().reserve_bytes, in.reserve_bytes);
  EXPECT_EQ(b->experts_placement().first_device_layer, 3);
  expect_same_run(*a, *b);
  expect_layers_on(*b, one, 3);

  a->reset();
  const moe::CountingMoeBackend none(true, in.reserve_bytes - 1);
  opt.experts_backend = &none;
  auto c = Engine::open(dir, opt);
  EXPECT_EQ(c->experts_placement().device_layers, 0);
  expect_same_run(*a, *c);
  expect_layers_on(*c, none, 4);
}

// Without a device (the CPU MoE backend reports none) auto keeps every layer on the host and
// says why; the model on the host reserves the margin only.
TEST(ExpertsAuto, OnTheCpuBackendKeepsEveryLayerOnTheHost) {
  EngineOptions opt = test::options_for_fused("on");
  opt.experts_placement.fit = true;
  ::testing::internal::CaptureStderr();
  auto e = Engine::open(test::shared_tiny_family("tiny-qwen3-moe"), opt);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("moex: experts: layers 1-2 on cpu (--experts-on auto: the experts' "
                     "backend has no device memory)"),
            std::string::npos)
      << err;
  EXPECT_EQ(e->experts_placement().device_layers, 0);
  EXPECT_EQ(e->experts_placement_inputs().reserve_bytes, moe::kDeviceMarginBytes);
  EXPECT_THROW(e->experts_backend(0), Error);  // a dense layer
}

}  // namespace
}  // namespace moex::model::engine
