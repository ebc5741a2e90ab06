// Micro-benchmark of the expert kernels on one layer shape (Qwen3-30B-A3B: Din 2048, Dff 768,
// top-8, 4-bit group 64, bf16 scales): fused decode path vs the fallback (gather_qmm x3 +
// activation + weighted sum), single qdot kernels, and a plain read-bandwidth reference, all
// reported as GB/s of weight bytes. Expert weights exceed the last-level cache and each call
// selects experts not used by the previous calls, so the figures measure memory, not cache.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <deque>
#include <string>
#include <numeric>

#include "core/parallel.h"
#include "core/strict_parse.h"
#include "kernels/kernels_test_util.h"

namespace moex::kernels {
namespace {

using testing::ExpertsSpec;

// Experts in the benchmark layer: MOEX_BENCH_EXPERTS (default 256, ~680 MB of weights).
int64_t bench_experts() {
  static const int64_t e = [] {
    const char* v = std::getenv("MOEX_BENCH_EXPERTS");
    return v ? parse_int_strict(v, "environment variable MOEX_BENCH_EXPERTS", 8, 1 << 20)
             : int64_t{256};
  }();
  return e;
}

struct Layer {
  testing::RandomExperts ex;
  int64_t bytes_per_token = 0;  // weight bytes one decode step reads (packed + scales + biases)
  std::vector<float> x;
};

int64_t expert_bytes(const QuantWeightsView& w) {
  return w.n * w.format().row_bytes_with_scales(w.k);
}

const Layer& layer() {
  static const Layer l = [] {
    Layer l;
    ExpertsSpec s{bench_experts(), 2048, 768, 4, 4, 64, DType::BF16, Activation::kSwiGLU};
    l.ex = testing::make_random_experts(s, 42);
    l.bytes_per_token = 8 * (expert_bytes(l.ex.view.gate) + expert_bytes(l.ex.view.up) +
                             expert_bytes(l.ex.view.down));
    l.x = testing::random_normal(2048, 1.f, 1);
    return l;
  }();
  return l;
}

constexpr int kTopK = 8;

// Next call's experts: consecutive, never the ones of the previous calls until all are used.
void next_ids(int32_t* ids, int64_t& cursor) {
  for (int k = 0; k < kTopK; ++k) ids[k] = int32_t((cursor + k) % bench_experts());
  cursor += kTopK;
}

void report(benchmark::State& st, int64_t bytes_per_iter) {
  st.counters["GB/s"] = benchmark::Counter(double(bytes_per_iter) * double(st.iterations()) / 1e9,
                                           benchmark::Counter::kIsRate);
  st.SetLabel(isa_name(active_isa()));
}

void BM_moe_decode_fused(benchmark::State& st) {
  const Layer& l = layer();
  set_num_threads(int(st.range(0)));
  std::vector<float> act(kTopK * 768), partials(kTopK * 2048), out(2048);
  std::vector<float> scores(kTopK, 0.125f);
  int32_t ids[kTopK];
  int64_t cursor = 0;
  FusedDecodeArgs a;
  a.experts = &l.ex.view;
  a.x = l.x.data();
  a.expert_ids = ids;
  a.scores = scores.data();
  a.top_k = kTopK;
  a.act = act.data();
  a.partials = partials.data();
  a.out = out.data();
  for (auto _ : st) {
    next_ids(ids, cursor);
    moe_decode_fused(a);
    benchmark::DoNotOptimize(out.data());
  }
  report(st, l.bytes_per_token);
  st.SetLabel(moe_decode_fused_name(l.ex.view, active_isa()));
}

void BM_moe_decode_fallback(benchmark::State& st) {
  const Layer& l = layer();
  set_num_threads(int(st.range(0)));
  std::vector<float> out(2048), scores(kTopK, 0.125f);
  testing::FallbackBuffers buf;
  int32_t ids[kTopK];
  int64_t cursor = 0;
  for (auto _ : st) {
    next_ids(ids, cursor);
    testing::fallback_moe(l.ex.view, l.x.data(), ids, scores.data(), kTopK, buf, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  report(st, l.bytes_per_token);
  st.SetLabel(gather_qmm_name(l.ex.view.up, active_isa()) + " x3 + activation + weighted_sum");
}

// The format a kernel is benchmarked on: affine at group 64 with BF16 scales (mlx-community's
// default), or the kernel's own fp, ggml or float format.
quant::Format bench_format(const QdotKernel& kern) {
  if (quant::is_fp_mode(kern.mode)) return quant::Format::fp(kern.mode);
  if (kern.mode == quant::Mode::kFloat)
    return quant::Format::dense(kern.bits == 32 ? DType::F32 : DType::BF16);
  if (quant::is_ggml_mode(kern.mode)) {
    return quant::Format::ggml(kern.mode, kern.bits, quant::ggml_group_size(kern.mode, kern.bits));
  }
  return quant::Format::affine(kern.bits, 64, DType::BF16);
}

// Up projections (2048 -> 768) of MOEX_BENCH_EXPERTS experts in the kernel's format.
const QuantWeightsView& projection(const QdotKernel& kern) {
  static std::vector<std::pair<quant::Format, testing::RandomQuant>> cache;
  const quant::Format f = bench_format(kern);
  if (f == quant::Format::affine(4, 64, DType::BF16)) return layer().ex.view.up;
  for (auto& [cf, q] : cache)
    if (cf == f) return q.view;
  cache.emplace_back(f, testing::make_random_quant(bench_experts(), 768, 2048, f, 7));
  return cache.back().second.view;
}

// One qdot kernel over all rows of 8 experts per call (a stage-A-like sweep).
void BM_qdot_rows(benchmark::State& st, const QdotKernel& kern) {
  set_num_threads(int(st.range(0)));
  const QuantWeightsView& w = projection(kern);
  const Layer& l = layer();
  PreparedVectors px;
  px.prepare(kern, l.x.data(), 1, w.k, w.k, w.group_size);
  std::vector<float> out(size_t(kTopK * w.n));
  int32_t ids[kTopK];
  int64_t cursor = 0;
  for (auto _ : st) {
    next_ids(ids, cursor);
    parallel_for(kTopK * w.n, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi;) {
        const int64_t k = i / w.n, r0 = i % w.n, r1 = std::min(w.n, r0 + (hi - i));
        kern.dot_rows({&w, ids[k], r0, r1, px.at(0), out.data() + k * w.n + r0});
        i += r1 - r0;
      }
    });
    benchmark::DoNotOptimize(out.data());
  }
  report(st, kTopK * expert_bytes(w));
  st.SetLabel(kern.name);
}

// The arithmetic ceiling of a multi-vector kernel (what prefill and batched decode run on):
// 256 rows x 4096 in the kernel's format, small enough to stay in L2, dotted with 4 prepared
// vectors per pass on one thread. Reports multiply-accumulates per second (GMAC/s).
void BM_qdot_compute(benchmark::State& st, const QdotKernel& kern) {
  set_num_threads(1);
  constexpr int64_t kN = 256, kK = 4096, kX = 4;
  const quant::Format f = bench_format(kern);
  static std::vector<std::pair<quant::Format, testing::RandomQuant>> cache;
  const QuantWeightsView* w = nullptr;
  for (auto& [cf, q] : cache)
    if (cf == f) w = &q.view;
  if (!w) w = &cache.emplace_back(f, testing::make_random_quant(1, kN, kK, f, 11)).second.view;
  const std::vector<float> x = testing::random_normal(kX * kK, 1.f, 3);
  PreparedVectors px;
  px.prepare(kern, x.data(), kX, kK, kK, f.group_size, false);
  std::vector<float> out(size_t(kX * kN));
  const void* xs[kX] = {px.at(0), px.at(1), px.at(2), px.at(3)};
  float* os[kX] = {&out[0], &out[kN], &out[2 * kN], &out[3 * kN]};
  for (auto _ : st) {
    qdot_rows_multi(kern, {w, 0, 0, kN, xs, os, int(kX)});
    benchmark::DoNotOptimize(out.data());
  }
  st.counters["GMAC/s"] = benchmark::Counter(double(kX * kN * kK) * double(st.iterations()) / 1e9,
                                             benchmark::Counter::kIsRate);
  st.SetLabel(kern.name);
}

// Reference: summing the same weight bytes (the memory-read ceiling for these kernels).
void BM_read_bandwidth(benchmark::State& st) {
  const Layer& l = layer();
  set_num_threads(int(st.range(0)));
  const QuantWeightsView& w = l.ex.view.up;
  const int64_t per_expert = w.n * w.k * w.bits / 8 / 8;  // uint64 words
  int32_t ids[kTopK];
  int64_t cursor = 0;
  for (auto _ : st) {
    next_ids(ids, cursor);
    uint64_t total = 0;
    parallel_for(kTopK, [&](int64_t lo, int64_t hi) {
      uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (int64_t k = lo; k < hi; ++k) {
        const uint64_t* p = reinterpret_cast<const uint64_t*>(w.w) + ids[k] * per_expert;
        for (int64_t i = 0; i < per_expert; i += 4) {
          s0 += p[i];
          s1 += p[i + 1];
          s2 += p[i + 2];
          s3 += p[i + 3];
        }
      }
      benchmark::DoNotOptimize(s0 + s1 + s2 + s3);
    });
    benchmark::DoNotOptimize(total);
  }
  report(st, kTopK * per_expert * 8);
}

BENCHMARK(BM_moe_decode_fused)->Arg(1)->Arg(2)->MinTime(0.3)->UseRealTime();
BENCHMARK(BM_moe_decode_fallback)->Arg(1)->Arg(2)->MinTime(0.3)->UseRealTime();
BENCHMARK(BM_read_bandwidth)->Arg(1)->Arg(2)->MinTime(0.3)->UseRealTime();
}  // namespace
}  // namespace moex::kernels

int main(int argc, char** argv) {
  using namespace moex::kernels;
  const bool vbmi = moex::avx512_vbmi_active();
  for (const QdotKernel& kern : qdot_kernels()) {
    if (!moex::isa_supported(kern.isa) || (kern.needs_vbmi && !vbmi)) continue;
    if (kern.bits == 4 || kern.bits == 6 || kern.bits == 8)
      benchmark::RegisterBenchmark(kern.name, BM_qdot_rows, kern)
          ->Arg(1)
          ->Arg(2)
          ->MinTime(0.3)
          ->UseRealTime();
    static std::deque<std::string> names;  // RegisterBenchmark keeps the pointer
    if (kern.dot_rows_multi)  // the VNNI and AVX2 bodies
      benchmark::RegisterBenchmark(names.emplace_back(std::string("compute/") + kern.name).c_str(),
                                   BM_qdot_compute, kern)
          ->MinTime(0.3)
          ->UseRealTime();
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
