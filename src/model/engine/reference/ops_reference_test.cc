// Reference test (label `reference`): runs moex's numeric ops on deterministic inputs, writes
// inputs and outputs as raw f32 files plus a manifest, and asks ops_reference.py (mlx) to
// recompute each case and compare (normalized RMS error). MOEX_PYTHON must have mlx + mlx-lm.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "core/isa.h"
#include "kernels/qdot.h"
#include "backend/cpu/attention.h"
#include "backend/cpu/linear.h"
#include "backend/cpu/norm.h"
#include "backend/cpu/rope.h"
#include "backend/cpu/sampling.h"
#include "backend/cpu/softmax.h"
#include "quant/quantize.h"

namespace moex::ops {
namespace {

namespace fs = std::filesystem;

std::vector<float> rnd(int64_t n, uint64_t seed, float scale = 1.f) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> d(0.f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(g);
  return v;
}

class Dump {
 public:
  explicit Dump(fs::path dir) : dir_(std::move(dir)) { fs::create_directories(dir_); }
  // Writes raw little-endian f32 (or uint32 for packed weights) and returns the file name.
  template <typename T>
  std::string write(const std::string& name, const std::vector<T>& v) {
    std::ofstream f(dir_ / name, std::ios::binary);
    f.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(T)));
    return name;
  }
  void add(nlohmann::json c) { cases_.push_back(std::move(c)); }
  fs::path finish() {
    std::ofstream(dir_ / "manifest.json") << nlohmann::json(cases_).dump(1);
    return dir_ / "manifest.json";
  }

 private:
  fs::path dir_;
  std::vector<nlohmann::json> cases_;
};

void rope_cases(Dump& d) {
  struct R {
    std::string name;
    RopeSpec spec;
  };
  std::vector<R> specs;
  specs.push_back({"default", RopeSpec{.dims = 64, .base = 1e6}});
  specs.push_back({"traditional", RopeSpec{.dims = 64, .base = 5e5, .traditional = true}});
  specs.push_back({"partial", RopeSpec{.dims = 32, .base = 1e4}});
  specs.push_back({"linear", RopeSpec{.kind = RopeKind::kLinear, .dims = 64, .base = 1e4, .factor = 2.0}});
  specs.push_back({"llama3", RopeSpec{.kind = RopeKind::kLlama3, .dims = 64, .base = 5e5,
                                      .traditional = true, .factor = 8.0, .low_freq_factor = 1.0,
                                      .high_freq_factor = 4.0, .original_max_position = 8192}});
  RopeSpec lr{.kind = RopeKind::kLongrope, .dims = 64, .base = 1e4, .original_max_position = 4096};
  for (int i = 0; i < 32; ++i) {
    lr.long_factor.push_back(1.0 + 0.9 * i);
    lr.short_factor.push_back(1.0 + 0.05 * i);
  }
  lr.max_position = 131072;
  specs.push_back({"longrope", lr});
  lr.long_mscale = 1.243163121016122;
  lr.short_mscale = 1.243163121016122;
  specs.push_back({"longrope_mscale", lr});
  RopeSpec yarn{.kind = RopeKind::kYarn, .dims = 64, .base = 1e6, .factor = 4.0,
                .original_max_position = 4096};
  specs.push_back({"yarn", yarn});
  yarn.beta_fast = 16.0;
  yarn.beta_slow = 2.0;
  yarn.mscale = 1.0;
  yarn.mscale_all_dim = 0.5;
  yarn.traditional = true;
  specs.push_back({"yarn_params", yarn});
  // Dynamic NTK past max_position_embeddings (the call ends at 1005 > 512).
  specs.push_back({"dynamic", RopeSpec{.kind = RopeKind::kDynamic, .dims = 64, .base = 1e4,
                                       .factor = 2.0, .max_position = 512}});
  // Gemma-4's full layers: a quarter of the pairs of the whole head rotated (dims = head_dim).
  specs.push_back({"proportional", RopeSpec{.kind = RopeKind::kProportional, .dims = 64,
                                            .base = 1e6, .rotated_dims = 16}});
  specs.push_back({"proportional_factor", RopeSpec{.kind = RopeKind::kProportional, .dims = 64,
                                                   .base = 1e4, .factor = 2.0,
                                                   .rotated_dims = 32}});
  const int64_t rows = 5, heads = 3, hd = 64, pos0 = 1000;
  int seed = 100;
  for (auto& r : specs) {
    auto x = rnd(rows * heads * hd, seed++);
    auto y = x;
    Rope(r.spec).apply_rows(y.data(), rows, heads, hd, pos0);
    nlohmann::json c = {{"op", "rope"}, {"name", "rope_" + r.name}, {"kind", rope_kind_name(r.spec.kind)},
                        {"dims", r.spec.dims}, {"base", r.spec.base}, {"traditional", r.spec.traditional},
                        {"factor", r.spec.factor}, {"low_freq_factor", r.spec.low_freq_factor},
                        {"high_freq_factor", r.spec.high_freq_factor},
                        {"original_max_position", r.spec.original_max_position},
                        {"max_position", r.spec.max_position}, {"long_factor", r.spec.long_factor},
                        {"short_factor", r.spec.short_factor}, {"long_mscale", r.spec.long_mscale},
                        {"short_mscale", r.spec.short_mscale}, {"beta_fast", r.spec.beta_fast},
                        {"beta_slow", r.spec.beta_slow}, {"mscale", r.spec.mscale},
                        {"mscale_all_dim", r.spec.mscale_all_dim},
                        {"rotated_dims", r.spec.rotated_dims}, {"rows", rows}, {"heads", heads}, {"head_dim", hd}, {"offset", pos0},
                        {"x", d.write(r.name + "_x.bin", x)}, {"y", d.write(r.name + "_y.bin", y)}};
    d.add(c);
  }
}

void norm_cases(Dump& d) {
  const int64_t rows = 4, dim = 384;
  auto x = rnd(rows * dim, 200, 3.f), w = rnd(dim, 201), b = rnd(dim, 202);
  std::vector<float> y(x.size()), z(x.size());
  rms_norm({.x = x.data(), .out = y.data(), .weight = w.data(), .rows = rows, .dim = dim, .eps = 1e-6f});
  layer_norm({.x = x.data(), .out = z.data(), .weight = w.data(), .bias = b.data(), .rows = rows,
              .dim = dim, .eps = 1e-5f});
  d.write("norm_x.bin", x);
  d.write("norm_w.bin", w);
  d.write("norm_b.bin", b);
  d.add({{"op", "rms_norm"}, {"name", "rms_norm"}, {"rows", rows}, {"dim", dim}, {"eps", 1e-6},
         {"x", "norm_x.bin"}, {"w", "norm_w.bin"}, {"y", d.write("rms_y.bin", y)}});
  d.add({{"op", "layer_norm"}, {"name", "layer_norm"}, {"rows", rows}, {"dim", dim}, {"eps", 1e-5},
         {"x", "norm_x.bin"}, {"w", "norm_w.bin"}, {"b", "norm_b.bin"}, {"y", d.write("ln_y.bin", z)}});
}

void attention_cases(Dump& d) {
  const int64_t heads = 8, kv_heads = 2, hd = 32, past = 6, rows = 9;
  const int64_t len = past + rows;
  auto k = rnd(len * kv_heads * hd, 300), v = rnd(len * kv_heads * hd, 301);
  auto q = rnd(rows * heads * hd, 302);
  KvCache cache(kv_heads, hd, len);
  cache.append(k.data(), v.data(), len);
  const float scale = 1.f / std::sqrt(float(hd));
  std::vector<float> out(q.size());
  attention({.q = q.data(), .cache = &cache, .rows = rows, .pos0 = past, .heads = heads,
             .scale = scale, .out = out.data()});
  d.add({{"op", "attention"}, {"name", "attention_gqa_prefill_with_past"}, {"heads", heads},
         {"kv_heads", kv_heads}, {"head_dim", hd}, {"rows", rows}, {"past", past}, {"scale", scale},
         {"q", d.write("att_q.bin", q)}, {"k", d.write("att_k.bin", k)},
         {"v", d.write("att_v.bin", v)}, {"y", d.write("att_y.bin", out)}});
}

void linear_cases(Dump& d) {
  const int64_t n = 96, k = 256, rows = 3;
  for (int bits : {4, 8, 3, 6}) {
    const int gs = bits == 4 ? 64 : (bits == 8 ? 32 : 128);
    auto w = rnd(n * k, 400 + bits, 0.05f), x = rnd(rows * k, 500 + bits);
    auto qm = quant::quantize({.data = w.data(), .dtype = DType::F32, .rows = n, .k = k,
                               .bits = bits, .group_size = gs});
    Linear lin{quantized_matrix(qm.view()), FloatVec(), "q"};
    std::vector<float> y(static_cast<size_t>(rows * n));
    linear({.lin = &lin, .x = x.data(), .rows = rows, .out = y.data()});
    std::vector<float> sc(static_cast<size_t>(n * k / gs)), bi(sc.size());
    std::memcpy(sc.data(), qm.scales.data(), qm.scales.size());
    std::memcpy(bi.data(), qm.biases.data(), qm.biases.size());
    const std::string p = "lin" + std::to_string(bits);
    d.add({{"op", "qlinear"}, {"name", "quantized_matmul_b" + std::to_string(bits)}, {"n", n},
           {"x_step", kernels::qdot_kernel(active_isa(), bits).x_step()},
           {"k", k}, {"rows", rows}, {"bits", bits}, {"group_size", gs},
           {"w_f32", d.write(p + "_w.bin", w)}, {"packed", d.write(p + "_packed.bin", qm.packed)},
           {"scales", d.write(p + "_s.bin", sc)}, {"biases", d.write(p + "_b.bin", bi)},
           {"x", d.write(p + "_x.bin", x)}, {"y", d.write(p + "_y.bin", y)}});
  }
}

void sampling_cases(Dump& d) {
  const int64_t n = 1000;
  auto logits = rnd(n, 600, 3.f);
  auto lp = logits;
  log_softmax(lp.data(), n);
  std::vector<float> scratch;
  auto tp = lp, mp = lp, tk = lp;
  Sampler::apply_top_p(tp.data(), n, 0.9, scratch);
  Sampler::apply_min_p(mp.data(), n, 0.05);
  Sampler::apply_top_k(tk.data(), n, 50, scratch);
  d.add({{"op", "filters"}, {"name", "sampling_filters"}, {"n", n}, {"top_p", 0.9}, {"min_p", 0.05},
         {"top_k", 50}, {"logprobs", d.write("lp.bin", lp)}, {"top_p_out", d.write("tp.bin", tp)},
         {"min_p_out", d.write("mp.bin", mp)}, {"top_k_out", d.write("tk.bin", tk)}});
}

TEST(OpsReference, MatchesMlx) {
  const fs::path dir = fs::temp_directory_path() / ("moex_ops_ref_" + std::to_string(::getpid()));
  Dump d(dir);
  rope_cases(d);
  norm_cases(d);
  attention_cases(d);
  linear_cases(d);
  sampling_cases(d);
  const fs::path manifest = d.finish();
  const std::string cmd = std::string(MOEX_PYTHON) + " " + MOEX_OPS_REFERENCE_SCRIPT + " " +
                          manifest.string();
  const int rc = std::system(cmd.c_str());
  if (WIFEXITED(rc) && WEXITSTATUS(rc) == 77) GTEST_SKIP() << "mlx is not importable by " << MOEX_PYTHON;
  EXPECT_EQ(rc, 0) << cmd;
  if (rc == 0) fs::remove_all(dir);
}

}  // namespace
}  // namespace moex::ops
