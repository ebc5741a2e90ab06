// Decode attention alone: one query row against the KV caches of several layers, as a decode
// step meets them (each layer's cache read once per step, so it comes from memory, not from a
// cache), at f32 and f16 cache elements in alternating rounds of one run, beside a plain read
// of the same f32 planes on the same threads. Prints per-layer medians, ranges and GB/s.
//   attention_decode_bench [--context N] [--layers L] [--rounds R] [--heads H] [--kv-heads K]
//                          [--head-dim D]
// Defaults: qwen3-30b-a3b's attention (32 heads, 4 kv heads, head_dim 128), context 4096,
// 8 layers (134 MB of f32 keys and values), 5 rounds of 20 steps.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/attention.h"
#include "backend/cpu/parallel_work.h"
#include "backend/kv_cache.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/strict_parse.h"
#include "core/sysinfo.h"

namespace {

using moex::DType;
using moex::ops::KvCache;

struct Shape {
  int64_t context = 4096, layers = 8, rounds = 5, heads = 32, kv_heads = 4, head_dim = 128;
};

Shape parse(int argc, char** argv) {
  Shape s;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) moex::fail(a, ": a value is missing");
    const std::string v = argv[++i];
    int64_t* field = a == "--context"    ? &s.context
                     : a == "--layers"   ? &s.layers
                     : a == "--rounds"   ? &s.rounds
                     : a == "--heads"    ? &s.heads
                     : a == "--kv-heads" ? &s.kv_heads
                     : a == "--head-dim" ? &s.head_dim
                                         : nullptr;
    if (!field) moex::fail("unknown flag ", a);
    *field = moex::parse_int_strict(v, a, 1, int64_t(1) << 20);
  }
  if (s.heads % s.kv_heads != 0) moex::fail("--heads must be a multiple of --kv-heads");
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The plain read: every plane's floats summed, the planes shared out over the threads.
float read_planes(const std::vector<std::unique_ptr<KvCache>>& caches, int64_t floats) {
  const int64_t planes = int64_t(caches.size()) * 2;
  std::vector<float> part(static_cast<size_t>(planes), 0.f);  // one sum per plane
  moex::ops::parallel_for_work(planes, floats, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const KvCache& c = *caches[size_t(p / 2)];
      const float* x = p % 2 ? c.values() : c.keys();
      float acc[16] = {};
      for (int64_t i = 0; i + 16 <= floats; i += 16)
        for (int j = 0; j < 16; ++j) acc[j] += x[i + j];
      for (float a : acc) part[size_t(p)] += a;
    }
  });
  float total = 0;
  for (float p : part) total += p;
  return total;
}

}  // namespace

int main(int argc, char** argv) try {
  const Shape s = parse(argc, argv);
  const int64_t kvrow = s.kv_heads * s.head_dim, qrow = s.heads * s.head_dim;
  std::mt19937 gen(7);
  std::normal_distribution<float> normal;
  std::vector<float> k(static_cast<size_t>(s.context * kvrow)), v(k.size());
  std::vector<float> q(static_cast<size_t>(qrow)), out(q.size());
  for (float& x : k) x = normal(gen);
  for (float& x : v) x = normal(gen);
  for (float& x : q) x = 0.1f * normal(gen);
  std::vector<std::unique_ptr<KvCache>> f32, f16;
  for (int64_t l = 0; l < s.layers; ++l) {
    f32.push_back(std::make_unique<KvCache>(s.kv_heads, s.head_dim, s.context));
    f16.push_back(std::make_unique<KvCache>(s.kv_heads, s.head_dim, s.context, true, DType::F16));
    f32.back()->append(k.data(), v.data(), s.context);
    f16.back()->append(k.data(), v.data(), s.context);
  }
  const double f32_bytes = 2.0 * double(s.context * kvrow) * 4;  // per layer
  auto step = [&](const std::vector<std::unique_ptr<KvCache>>& caches) {
    for (const auto& c : caches)
      moex::ops::attention({.q = q.data(), .cache = c.get(), .rows = 1, .pos0 = s.context - 1,
                            .heads = s.heads, .scale = 0.088f, .out = out.data()});
  };
  std::vector<double> t32, t16, tread;
  volatile float sink = 0;
  for (int64_t r = 0; r < s.rounds; ++r)
    for (int arm = 0; arm < 3; ++arm)
      for (int i = 0; i < 20; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        if (arm == 0) step(f32);
        if (arm == 1) step(f16);
        if (arm == 2) sink = read_planes(f32, s.context * kvrow);
        const double ms = std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - t0).count() / double(s.layers);
        (arm == 0 ? t32 : arm == 1 ? t16 : tread).push_back(ms);
      }
  (void)sink;
  std::printf("attention_decode_bench: %s, %d threads, context %lld, %lld layers, %lld heads "
              "over %lld kv heads of %lld, %lld rounds x 20 steps\n",
              moex::cpu_model_name().c_str(), moex::num_threads(), (long long)s.context,
              (long long)s.layers, (long long)s.heads, (long long)s.kv_heads,
              (long long)s.head_dim, (long long)s.rounds);
  std::printf("| arm | ms per layer, median (min-max) | bytes per layer (MB) | GB/s |\n"
              "|---|--:|--:|--:|\n");
  for (int arm = 0; arm < 3; ++arm) {
    const std::vector<double>& t = arm == 0 ? t32 : arm == 1 ? t16 : tread;
    const double bytes = arm == 1 ? f32_bytes / 2 : f32_bytes;
    const double m = median(t);
    std::printf("| %s | %.3f (%.3f-%.3f) | %.1f | %.1f |\n",
                arm == 0 ? "attention, f32 cache" : arm == 1 ? "attention, f16 cache"
                                                             : "plain read of the f32 planes",
                m, *std::min_element(t.begin(), t.end()), *std::max_element(t.begin(), t.end()),
                bytes / 1e6, bytes / m / 1e6);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "attention_decode_bench: %s\n", e.what());
  return 1;
}
