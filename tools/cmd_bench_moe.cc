// `moex bench-moe`: one MoE layer's expert FFN at decode (M = 1), fused kernel vs gather_qmm
// fallback, interleaved in one process over a weight pool larger than the caches, reported
// as us/layer, GB/s of weight bytes read and the fraction of the measured read bandwidth.
// --backend cuda times the CUDA kernels instead (tools/util_cuda_bench.cc).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/isa.h"
#include "core/parallel.h"
#include "core/read_bandwidth.h"
#include "core/strict_parse.h"
#include "core/sysinfo.h"
#include "kernels/precision.h"
#include "model/presets.h"
#include "moe/dispatch_policy.h"
#include "moe/moe_bench.h"
#include "quant/format.h"
#include "tools/command.h"
#include "tools/util_cuda_bench.h"
#include "tools/util_flags.h"
#include "tools/util_report.h"

namespace moex::tools {
namespace {

struct BenchMoeOptions {
  std::string preset, shape, bits = "4", down_bits, group_size = "64", threads, isa, precision,
      repeats, layers_cycle, output = "md", backend = "cpu";
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
    const model::ModelPreset* p = model::find_preset(lowercase(o.preset));
    if (!p) {
      std::string names;
      for (const auto& q : model::all_presets()) names += (names.empty() ? "" : ", ") + q.name;
      fail("--preset: unknown preset '", o.preset, "'; expected one of: ", names);
    }
    if (p->experts <= 0) fail("--preset: '", o.preset, "' has no MoE experts");
    s = {p->name, p->hidden, p->moe_dff, p->experts, p->top_k, kernels::Activation::kSwiGLU, ""};
    if (p->activation == "geglu") s.act = kernels::Activation::kGeGLU;
    if (p->activation == "relu2") s.act = kernels::Activation::kSquaredReLU;
    if (p->activation == "swiglu_oai") s.act = kernels::Activation::kSwiGLUOai;
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

int run_bench_moe(const BenchMoeOptions& o) {
  const ReportFormat format = parse_report_format(o.output, "-o");
  const Shape shape = parse_shape(o);
  const bool cuda = moe::parse_backend(lowercase(o.backend), "--backend") == moe::Backend::kCuda;
  if (cuda) {
    const std::pair<const char*, std::string> cpu_only[] = {
        {"--threads", o.threads}, {"--isa", o.isa}, {"--precision", o.precision},
        {"--layers-cycle", o.layers_cycle}};
    for (const auto& [flag, value] : cpu_only)
      if (!value.empty())
        fail("bench-moe: ", flag, " is a CPU flag; it cannot be used with --backend cuda");
    if (!cuda_built_in()) require_cuda_device("bench-moe");  // throws: built without CUDA
  }
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
  const int repeats = o.repeats.empty()
                          ? (cuda ? 15 : 5)
                          : int(parse_int_strict(o.repeats, "--repeats", 1, 100000));
  moe::MoeBenchShape bshape;
  bshape.hidden = shape.hidden;
  bshape.dff = shape.dff;
  bshape.experts = shape.experts;
  bshape.top_k = shape.top_k;
  bshape.act = shape.act;
  bshape.bits = bits;
  bshape.down_bits = down_bits;
  bshape.group_size = group_size;
  if (cuda) {
    CudaBenchMoeArgs ca;
    ca.label = shape.label;
    ca.shape = bshape;
    ca.repeats = repeats;
    ca.format = format;
    ca.note = shape.note;
    return run_bench_moe_cuda(ca);
  }
  if (!o.threads.empty()) set_num_threads(parse_threads_flag(o.threads));
  if (!o.isa.empty()) set_active_isa(parse_isa(lowercase(o.isa), "--isa"));
  if (!o.precision.empty())
    kernels::set_active_precision(kernels::parse_precision(lowercase(o.precision), "--precision"));
  const int threads = num_threads();
  const Isa isa = active_isa();

  // Enough layers that the pool exceeds max(2 GB, 4 x L3): weights cannot stay in cache.
  const int64_t l3 = last_level_cache_bytes();
  const int64_t target = std::max<int64_t>(2'000'000'000, 4 * l3);
  const int64_t layers_flag =
      o.layers_cycle.empty() ? 0 : parse_int_strict(o.layers_cycle, "--layers-cycle", 1, 100000);
  const moe::MoeBenchPlan plan = moe::plan_moe_bench(bshape, target, layers_flag, 2, "bench-moe");
  const int64_t layers = plan.layers, layer_bytes = plan.layer_bytes;
  const int64_t expert_bytes = plan.expert_bytes;
  std::vector<std::string> notes;
  if (layers_flag > 0 && plan.pool_bytes < target)
    notes.push_back(str_cat("--layers-cycle ", layers, " gives a ", layers * layer_bytes / 1e9,
                            " GB pool, below max(2 GB, 4 x L3): figures may measure the cache"));
  const int64_t pool = plan.pool_bytes;
  const int64_t avail = moe::available_memory_bytes();
  if (avail > 0 && pool > avail * 3 / 4)
    fail("bench-moe: the weight pool (", layers, " layers x ", layer_bytes / 1e6,
         " MB = ", pool / 1e9, " GB) exceeds 3/4 of available memory (", avail / 1e9,
         " GB); use --layers-cycle N with fewer layers");

  std::fprintf(stderr, "bench-moe: measuring read bandwidth (%d threads)...\n", threads);
  const ReadBandwidthResult bw = measure_read_bandwidth({0, threads, 5});
  moe::MoeBenchArgs args;
  args.shape = bshape;
  args.plan = plan;
  args.repeats = repeats;
  args.context = "bench-moe";
  args.log = [](const std::string& line) {
    std::fprintf(stderr, "bench-moe: %s\n", line.c_str());
  };
  const moe::MoeBenchResult res = moe::run_moe_bench(args);
  const int64_t k = shape.top_k;
  const double check = res.fused_vs_fallback_nrms;

  const double bytes_per_call = double(k * expert_bytes);
  auto row = [&](const char* name, const moe::ArmTiming& s, double ratio) {
    const double gbps = bytes_per_call / (s.median * 1e-6) / 1e9;
    return std::vector<ReportCell>{text_cell(name),
                                   number_cell(s.median, 1),
                                   number_cell(s.min, 1),
                                   number_cell(s.max, 1),
                                   number_cell(gbps, 2),
                                   number_cell(gbps / bw.best_gbps, 3),
                                   number_cell(res.read_only.median / s.median, 3),
                                   number_cell(ratio, 3)};
  };

  Report rep;
  rep.title = str_cat("moex bench-moe ", shape.label);
  rep.header = {
      {"moex_commit", text_cell(moex_commit())},
      {"date", text_cell(utc_date_time())},
      {"cpu", text_cell(cpu_model_name())},
      {"backend", text_cell("cpu")},
      {"threads", integer_cell(threads)},
      {"isa", text_cell(isa_name(isa))},
      {"precision", text_cell(kernels::active_precision_label())},
      {"hidden", integer_cell(shape.hidden)},
      {"dff", integer_cell(shape.dff)},
      {"experts", integer_cell(shape.experts)},
      {"top_k", integer_cell(shape.top_k)},
      {"bits", integer_cell(bits)},
      {"down_bits", integer_cell(down_bits)},
      {"group_size", integer_cell(group_size)},
      {"activation", text_cell(kernels::activation_name(shape.act))},
      {"fused_kernel", text_cell(res.fused_kernel)},
      {"fallback_kernel", text_cell(res.fallback_kernel)},
      {"layers_cycled", integer_cell(layers)},
      {"weight_pool_gb", number_cell(pool / 1e9, 2)},
      {"l3_mb", number_cell(l3 / 1e6, 0)},
      {"max_l3_hit_fraction", number_cell(std::min(1.0, double(l3) / double(pool)), 3)},
      {"bytes_per_layer_call_mb", number_cell(bytes_per_call / 1e6, 3)},
      {"read_bw_best_gbps", number_cell(bw.best_gbps, 2)},
      {"read_bw_median_gbps", number_cell(bw.median_gbps, 2)},
      {"read_bw_method",
       text_cell(str_cat(bw.method, ", ", bw.bytes / 1e9, " GB, best of ", bw.passes))},
      {"read_bw_huge_page_fraction", number_cell(bw.huge_page_fraction, 2)},
      {"weight_pool_huge_page_fraction", number_cell(res.pool_huge_page_fraction, 2)},
      {"repeats", integer_cell(repeats)},
      {"expert_usage_min_max_expected",
       text_cell(str_cat(res.usage_min, " / ", res.usage_max, " / ", res.usage_expected))},
      {"fused_vs_fallback_nrms", sci_cell(check, 2)},
      {"fused_vs_fallback_max_abs", sci_cell(res.fused_vs_fallback_max_abs, 2)},
  };
  rep.columns = {"path",
                 "us_per_layer_median",
                 "us_min",
                 "us_max",
                 "weight_gbps",
                 "fraction_of_read_bw",
                 "fraction_of_read_only",
                 "speedup_vs_fallback"};
  rep.rows.push_back(row("fused", res.fused, res.ratio));
  rep.rows.push_back(row("fallback", res.fallback, 1.0));
  rep.rows.push_back(row("read_only", res.read_only, res.fallback.median / res.read_only.median));
  notes.push_back("speedup_vs_fallback = fallback median / this row's median (> 1: faster)");
  notes.push_back(
      "read_only: each call's weight bytes read with the probe's loop (AVX2 where the CPU has "
      "it, whatever --isa), split evenly over the threads, no arithmetic (what the memory "
      "gives this access pattern and pool); "
      "fraction_of_read_only = read_only median / this row's median");
  notes.push_back(
      str_cat("weight bytes per call = top_k x (gate+up+down packed + scales + "
              "biases) = ",
              k, " x ", expert_bytes, " B"));
  notes.push_back(str_cat("fused arm: ", res.fused_counters));
  notes.push_back(str_cat("fallback arm: ", res.fallback_counters));
  if (!res.fused_equals_fallback)  // the same row kernels on CPU: bit-identical by construction
    notes.push_back(str_cat("WARNING: fused and fallback differ (max |diff| ",
                            res.fused_vs_fallback_max_abs, ", normalized RMS ", check,
                            "); they must be bit-identical on CPU"));
  if (!shape.note.empty()) notes.push_back(shape.note);
  rep.notes = notes;
  std::fputs(render_report(rep, format).c_str(), stdout);
  return 0;
}

std::function<int()> setup_bench_moe(CLI::App& sub) {
  auto o = std::make_shared<BenchMoeOptions>();
  const CLI::Validator given = non_empty();  // a flag given an empty value is an error
  sub.add_option("--preset", o->preset, "model preset (real shapes), e.g. qwen3-30b-a3b")
      ->check(given);
  sub.add_option("--shape", o->shape, "hidden,dff,experts,top_k")
      ->type_name("INT,INT,INT,INT")
      ->check(given);
  sub.add_option("--bits", o->bits, "gate/up bits: 2,3,4,5,6,8")
      ->type_name("INT")
      ->capture_default_str()
      ->check(given);
  sub.add_option("--down-bits", o->down_bits, "down-projection bits (default: --bits)")
      ->type_name("INT")
      ->check(given);
  sub.add_option("--group-size", o->group_size, "quantization group size: 32, 64, 128")
      ->type_name("INT")
      ->capture_default_str()
      ->check(given);
  sub.add_option("--threads", o->threads, "threads, 1-1024 (default: all cores; cpu only)")
      ->type_name("INT")
      ->check(given);
  sub.add_option("--isa", o->isa, "scalar | avx2 | avx512 (default: the best; cpu only)")
      ->check(given);
  sub.add_option("--precision", o->precision, kPrecisionHelp)->type_name("TIER")->check(given);
  sub.add_option("--repeats", o->repeats, "timed passes per path (default: cpu 5, cuda 15)")
      ->type_name("INT")
      ->check(given);
  sub.add_option("--layers-cycle", o->layers_cycle,
                 "layers of distinct weights to cycle (default: enough for max(2 GB, 4 x L3); "
                 "cpu only)")
      ->type_name("INT")
      ->check(given);
  sub.add_option("-o,--output", o->output, "md | csv | json")->capture_default_str()->check(given);
  sub.add_option("--backend", o->backend, "cpu | cuda")->capture_default_str()->check(given);
  return [o] { return run_bench_moe(*o); };
}

MOEX_REGISTER_COMMAND(bench_moe, "bench-moe",
                      "time one MoE layer's experts at decode: fused vs gather_qmm fallback",
                      setup_bench_moe);

}  // namespace
}  // namespace moex::tools
