// `moex bench-moe`: one MoE layer's expert FFN at decode (M = 1), fused kernel vs gather_qmm
// fallback, interleaved in one process over a weight pool larger than the caches, reported
// as us/layer, GB/s of weight bytes read and the fraction of the measured read bandwidth.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/isa.h"
#include "core/parallel.h"
#include "core/read_bandwidth.h"
#include "core/strict_parse.h"
#include "core/sysinfo.h"
#include "kernels/moe_kernels.h"
#include "model/presets.h"
#include "moe/moe_block.h"
#include "moe/synthetic_experts.h"
#include "quant/format.h"
#include "tools/command.h"
#include "tools/util_report.h"

namespace moex::tools {
namespace {

struct BenchMoeOptions {
  std::string preset, shape, bits = "4", down_bits, group_size = "64", threads, isa, repeats = "5",
                             layers_cycle, output = "md", backend = "cpu";
};

struct Shape {
  std::string label;
  int64_t hidden = 0, dff = 0, experts = 0, top_k = 0;
  kernels::Activation act = kernels::Activation::kSwiGLU;
  std::string note;
};

Shape parse_shape(const BenchMoeOptions& o) {
  if (o.preset.empty() == o.shape.empty())
    fail("bench-moe: give exactly one of --preset NAME or --shape hidden,dff,experts,top_k");
  Shape s;
  if (!o.preset.empty()) {
    const model::ModelPreset* p = model::find_preset(o.preset);
    if (!p) {
      std::string names;
      for (const auto& q : model::all_presets()) names += (names.empty() ? "" : ", ") + q.name;
      fail("--preset: unknown preset '", o.preset, "'; expected one of: ", names);
    }
    if (p->experts <= 0) fail("--preset: '", o.preset, "' has no MoE experts");
    s = {p->name, p->hidden, p->moe_dff, p->experts, p->top_k, kernels::Activation::kSwiGLU, ""};
    if (p->activation == "geglu") s.act = kernels::Activation::kGeGLU;
    if (p->activation == "relu2") s.act = kernels::Activation::kSquaredReLU;
    if (p->shared_dff > 0)
      s.note = str_cat("the preset's shared expert (Dff ", p->shared_dff, ") is not included");
    return s;
  }
  std::vector<int64_t> v;
  std::stringstream ss(o.shape);
  std::string item;
  while (std::getline(ss, item, ',')) v.push_back(parse_int_strict(item, "--shape", 1, 1 << 20));
  if (v.size() != 4 || o.shape.back() == ',')
    fail("--shape: '", o.shape, "'; expected four positive integers hidden,dff,experts,top_k");
  s = {"", v[0], v[1], v[2], v[3], kernels::Activation::kSwiGLU, ""};
  s.label = str_cat(s.hidden, ",", s.dff, ",", s.experts, ",", s.top_k);
  if (s.top_k > s.experts) fail("--shape: top_k ", s.top_k, " > experts ", s.experts);
  return s;
}

int64_t mem_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

struct Stats {
  double median = 0, min = 0, max = 0;
};
Stats stats_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return {n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v.front(), v.back()};
}

// Uniform distinct experts and positive scores summing to 1.
void draw_routing(std::mt19937_64& rng, int64_t experts, int64_t k, std::vector<int32_t>& perm,
                  int32_t* ids, float* scores) {
  float sum = 0;
  for (int64_t j = 0; j < k; ++j) {
    const int64_t r = j + int64_t(rng() % uint64_t(experts - j));
    std::swap(perm[size_t(j)], perm[size_t(r)]);
    ids[j] = perm[size_t(j)];
    scores[j] = 0.05f + float(rng() % 1000) / 1000.f;
    sum += scores[j];
  }
  for (int64_t j = 0; j < k; ++j) scores[j] /= sum;
}

double nrms(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += double(a[i] - b[i]) * double(a[i] - b[i]);
    den += double(b[i]) * double(b[i]);
  }
  return den > 0 ? std::sqrt(num / den) : 0.0;
}

int run_bench_moe(const BenchMoeOptions& o) {
  const ReportFormat format = parse_report_format(o.output, "-o");
  const Shape shape = parse_shape(o);
  if (moe::parse_backend(o.backend, "--backend") == moe::Backend::kCuda)
    fail(
        "--backend cuda: CUDA backend not built into bench-moe (reserved for a later issue); "
        "use --backend cpu");
  const int bits = int(parse_int_strict(o.bits, "--bits", 2, 8));
  const int down_bits =
      o.down_bits.empty() ? bits : int(parse_int_strict(o.down_bits, "--down-bits", 2, 8));
  const int group_size = int(parse_int_strict(o.group_size, "--group-size", 32, 128));
  if (!quant::is_valid_bits(bits) || !quant::is_valid_bits(down_bits))
    fail("--bits/--down-bits: ", bits, "/", down_bits, "; expected each one of 2, 3, 4, 5, 6, 8");
  if (!quant::is_valid_group_size(group_size))
    fail("--group-size: ", group_size, "; expected 32, 64 or 128");
  if (shape.hidden % group_size || shape.dff % group_size)
    fail("bench-moe: hidden ", shape.hidden, " and dff ", shape.dff,
         " must both be multiples of the group size ", group_size);
  const int repeats = int(parse_int_strict(o.repeats, "--repeats", 1, 100000));
  if (!o.threads.empty()) set_num_threads(int(parse_int_strict(o.threads, "--threads", 1, 4096)));
  if (!o.isa.empty()) set_active_isa(parse_isa(o.isa, "--isa"));
  const int threads = num_threads();
  const Isa isa = active_isa();

  moe::SyntheticExpertsArgs sa;
  sa.experts = shape.experts;
  sa.din = shape.hidden;
  sa.dff = shape.dff;
  sa.gate_bits = sa.up_bits = bits;
  sa.down_bits = down_bits;
  sa.group_size = group_size;
  sa.act = shape.act;
  // One small expert stack validates bits / group size / shape before anything big happens.
  moe::SyntheticExpertsArgs probe_args = sa;
  probe_args.experts = 1;
  const int64_t expert_bytes = moe::SyntheticExperts(probe_args).expert_bytes();
  const int64_t layer_bytes = expert_bytes * shape.experts;

  // Enough layers that the pool exceeds max(2 GB, 4 x L3): weights cannot stay in cache.
  const int64_t l3 = last_level_cache_bytes();
  const int64_t target = std::max<int64_t>(2'000'000'000, 4 * l3);
  int64_t layers = std::max<int64_t>(2, (target + layer_bytes - 1) / layer_bytes);
  std::vector<std::string> notes;
  if (!o.layers_cycle.empty()) {
    layers = parse_int_strict(o.layers_cycle, "--layers-cycle", 1, 100000);
    if (layers * layer_bytes < target)
      notes.push_back(str_cat("--layers-cycle ", layers, " gives a ", layers * layer_bytes / 1e9,
                              " GB pool, below max(2 GB, 4 x L3): figures may measure the cache"));
  }
  const int64_t pool = layers * layer_bytes;
  const int64_t avail = mem_available_bytes();
  if (avail > 0 && pool > avail * 3 / 4)
    fail("bench-moe: the weight pool (", layers, " layers x ", layer_bytes / 1e6,
         " MB = ", pool / 1e9, " GB) exceeds 3/4 of available memory (", avail / 1e9,
         " GB); use --layers-cycle N with fewer layers");

  std::fprintf(stderr, "bench-moe: measuring read bandwidth (%d threads)...\n", threads);
  const ReadBandwidthResult bw = measure_read_bandwidth({0, threads, 5});
  std::fprintf(stderr, "bench-moe: building %lld layers of random %d-bit experts (%.2f GB)...\n",
               (long long)layers, bits, pool / 1e9);
  std::vector<std::unique_ptr<moe::SyntheticExperts>> weights;
  std::vector<moe::MoeBlock> fused_blocks, fallback_blocks;
  moe::MoePolicy on, off;
  on.settings.mode = moe::FusedMode::kOn;
  on.settings.mode_source = moe::SettingSource::kFlag;
  off.settings.mode = moe::FusedMode::kOff;
  off.settings.mode_source = moe::SettingSource::kFlag;
  for (int64_t l = 0; l < layers; ++l) {
    sa.seed = uint64_t(l) + 1;
    weights.push_back(std::make_unique<moe::SyntheticExperts>(sa));
    const moe::MoeLayer layer{weights.back()->view()};
    fused_blocks.emplace_back(layer, on);
    fallback_blocks.emplace_back(layer, off);
  }
  if (fused_blocks[0].decision(1).path != moe::Path::kFused)
    fail("bench-moe: the fused arm would not run the fused path: ",
         fused_blocks[0].decision(1).explanation());

  const int64_t din = shape.hidden, k = shape.top_k;
  std::mt19937_64 rng(12345);
  std::normal_distribution<float> nd;
  const size_t nl = static_cast<size_t>(layers), nd_ = static_cast<size_t>(din);
  const size_t nk = static_cast<size_t>(k), ne = static_cast<size_t>(shape.experts);
  std::vector<std::vector<float>> xs(nl, std::vector<float>(nd_, 0.f));
  for (auto& x : xs)
    for (float& v : x) v = nd(rng);
  std::vector<int32_t> perm(ne), ids(nk);
  for (int64_t e = 0; e < shape.experts; ++e) perm[size_t(e)] = int32_t(e);
  std::vector<float> scores(nk), out(nd_), out_ref(nd_);
  std::vector<int64_t> usage(nl * ne, 0);
  moe::MoeWorkspace ws;
  moe::PathCounters fused_counters, fallback_counters;

  // Numerical check: both paths on the same call.
  draw_routing(rng, shape.experts, k, perm, ids.data(), scores.data());
  moe::MoeBlockCall call{xs[0].data(), 1, ids.data(), scores.data(), int(k), false, out.data()};
  fused_blocks[0].run(call, ws, nullptr);
  call.out = out_ref.data();
  fallback_blocks[0].run(call, ws, nullptr);
  const double check = nrms(out, out_ref);
  call.out = out.data();

  // One pass = every layer once, fresh random routing per call.
  auto pass = [&](std::vector<moe::MoeBlock>& blocks, moe::PathCounters& counters) {
    const double t0 = now_seconds();
    for (int64_t l = 0; l < layers; ++l) {
      draw_routing(rng, shape.experts, k, perm, ids.data(), scores.data());
      for (int64_t j = 0; j < k; ++j) ++usage[size_t(l * shape.experts + ids[size_t(j)])];
      call.x = xs[size_t(l)].data();
      blocks[size_t(l)].run(call, ws, &counters);
    }
    return (now_seconds() - t0) / double(layers) * 1e6;
  };
  std::fprintf(stderr, "bench-moe: warm-up, then %d repeats of fused and fallback passes...\n",
               repeats);
  pass(fused_blocks, fused_counters);
  pass(fallback_blocks, fallback_counters);
  std::vector<double> fused_us, fallback_us;
  for (int r = 0; r < repeats; ++r) {  // alternate which arm goes first: A B, B A, ...
    if (r % 2 == 0) {
      fused_us.push_back(pass(fused_blocks, fused_counters));
      fallback_us.push_back(pass(fallback_blocks, fallback_counters));
    } else {
      fallback_us.push_back(pass(fallback_blocks, fallback_counters));
      fused_us.push_back(pass(fused_blocks, fused_counters));
    }
  }
  // Each arm must have run the path it is named after, on every call.
  const int64_t calls = int64_t(repeats + 1) * layers;
  if (fused_counters.fused_calls() != calls || fallback_counters.fallback_calls() != calls)
    fail("bench-moe: path check failed: fused arm ", fused_counters.summary(), "; fallback arm ",
         fallback_counters.summary(), " (expected ", calls, " calls each)");

  const Stats fs = stats_of(fused_us), bs = stats_of(fallback_us);
  const double bytes_per_call = double(k * expert_bytes);
  auto row = [&](const char* name, const Stats& s, double ratio) {
    const double gbps = bytes_per_call / (s.median * 1e-6) / 1e9;
    return std::vector<ReportCell>{text_cell(name),       number_cell(s.median, 1),
                                   number_cell(s.min, 1), number_cell(s.max, 1),
                                   number_cell(gbps, 2),  number_cell(gbps / bw.best_gbps, 3),
                                   number_cell(ratio, 3)};
  };
  const auto [umin, umax] = std::minmax_element(usage.begin(), usage.end());
  const double uexp = double((repeats + 1) * 2 * k) / double(shape.experts);

  Report rep;
  rep.title = str_cat("moex bench-moe ", shape.label);
  const kernels::MoeExpertsView& v0 = weights[0]->view();
  rep.header = {
      {"moex_commit", text_cell(moex_commit())},
      {"date", text_cell(utc_date_time())},
      {"cpu", text_cell(cpu_model_name())},
      {"backend", text_cell("cpu")},
      {"threads", integer_cell(threads)},
      {"isa", text_cell(isa_name(isa))},
      {"hidden", integer_cell(shape.hidden)},
      {"dff", integer_cell(shape.dff)},
      {"experts", integer_cell(shape.experts)},
      {"top_k", integer_cell(shape.top_k)},
      {"bits", integer_cell(bits)},
      {"down_bits", integer_cell(down_bits)},
      {"group_size", integer_cell(group_size)},
      {"activation", text_cell(kernels::activation_name(shape.act))},
      {"fused_kernel", text_cell(kernels::moe_decode_fused_name(v0, isa))},
      {"fallback_kernel", text_cell(kernels::gather_qmm_name(v0.up, isa))},
      {"layers_cycled", integer_cell(layers)},
      {"weight_pool_gb", number_cell(pool / 1e9, 2)},
      {"l3_mb", number_cell(l3 / 1e6, 0)},
      {"max_l3_hit_fraction", number_cell(std::min(1.0, double(l3) / double(pool)), 3)},
      {"bytes_per_layer_call_mb", number_cell(bytes_per_call / 1e6, 3)},
      {"read_bw_best_gbps", number_cell(bw.best_gbps, 2)},
      {"read_bw_median_gbps", number_cell(bw.median_gbps, 2)},
      {"read_bw_method",
       text_cell(str_cat(bw.method, ", ", bw.bytes / 1e9, " GB, best of ", bw.passes))},
      {"repeats", integer_cell(repeats)},
      {"expert_usage_min_max_expected", text_cell(str_cat(*umin, " / ", *umax, " / ", uexp))},
      {"fused_vs_fallback_nrms", sci_cell(check, 2)},
  };
  rep.columns = {"path",
                 "us_per_layer_median",
                 "us_min",
                 "us_max",
                 "weight_gbps",
                 "fraction_of_read_bw",
                 "speedup_vs_fallback"};
  rep.rows.push_back(row("fused", fs, bs.median / fs.median));
  rep.rows.push_back(row("fallback", bs, 1.0));
  notes.push_back("speedup_vs_fallback = fallback median / fused median (> 1: fused faster)");
  notes.push_back(
      str_cat("weight bytes per call = top_k x (gate+up+down packed + scales + "
              "biases) = ",
              k, " x ", expert_bytes, " B"));
  notes.push_back(str_cat("fused arm: ", fused_counters.summary()));
  notes.push_back(str_cat("fallback arm: ", fallback_counters.summary()));
  if (check > 5e-3)
    notes.push_back(str_cat("WARNING: fused vs fallback normalized RMS ", check, " > 5e-3"));
  if (!shape.note.empty()) notes.push_back(shape.note);
  rep.notes = notes;
  std::fputs(render_report(rep, format).c_str(), stdout);
  return 0;
}

std::function<int()> setup(CLI::App& sub) {
  auto o = std::make_shared<BenchMoeOptions>();
  sub.add_option("--preset", o->preset, "model preset (real shapes), e.g. qwen3-30b-a3b");
  sub.add_option("--shape", o->shape, "hidden,dff,experts,top_k");
  sub.add_option("--bits", o->bits, "gate/up bits (2,3,4,5,6,8; default 4)");
  sub.add_option("--down-bits", o->down_bits, "down-projection bits (default: --bits)");
  sub.add_option("--group-size", o->group_size, "quantization group size (32, 64, 128)");
  sub.add_option("--threads", o->threads, "threads (default: all cores)");
  sub.add_option("--isa", o->isa, "scalar | avx2 | avx512");
  sub.add_option("--repeats", o->repeats, "timed passes per path (default 5)");
  sub.add_option("--layers-cycle", o->layers_cycle,
                 "layers of distinct weights to cycle (default: enough for max(2 GB, 4 x L3))");
  sub.add_option("-o,--output", o->output, "md | csv | json");
  sub.add_option("--backend", o->backend, "cpu (cuda reserved)");
  return [o] { return run_bench_moe(*o); };
}

MOEX_REGISTER_COMMAND(bench_moe, "bench-moe",
                      "time one MoE layer's experts at decode: fused vs gather_qmm fallback",
                      setup);

}  // namespace
}  // namespace moex::tools
