// Micro-benchmark of the expert kernels on one layer shape (Qwen3-30B-A3B: Din 2048, Dff 768,
// top-8, 4-bit group 64, bf16 scales): fused decode path vs the fallback (gather_qmm x3 +
// activation + weighted sum), single qdot kernels, and a plain read-bandwidth reference, all
// reported as GB/s of weight bytes. Expert weights exceed the last-level cache and each call
// selects experts not used by the previous calls, so the figures measure memory, not cache.
#include <benchmark/benchmark.h>

#include <cstdlib>
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

// Up projections (2048 -> 768) of MOEX_BENCH_EXPERTS experts at `bits`, f32 scales excluded.
const QuantWeightsView& projection(int bits) {
  static std::vector<testing::RandomQuant> cache(9);
  if (bits == 4) return layer().ex.view.up;
  if (cache[size_t(bits)].w.empty())
    cache[size_t(bits)] =
        testing::make_random_quant(bench_experts(), 768, 2048, bits, 64, DType::BF16, 7);
  return cache[size_t(bits)].view;
}

// One qdot kernel over all rows of 8 experts per call (a stage-A-like sweep).
void BM_qdot_rows(benchmark::State& st, const QdotKernel& kern) {
  set_num_threads(int(st.range(0)));
  const QuantWeightsView& w = projection(kern.bits);
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
  for (const QdotKernel& kern : qdot_kernels())
    if (moex::isa_supported(kern.isa) && (kern.bits == 4 || kern.bits == 6 || kern.bits == 8))
      benchmark::RegisterBenchmark(kern.name, BM_qdot_rows, kern)
          ->Arg(1)
          ->Arg(2)
          ->MinTime(0.3)
          ->UseRealTime();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
