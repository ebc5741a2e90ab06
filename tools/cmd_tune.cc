// `moex tune`: the kernel-level per-host calibration. Times fused vs fallback per layer over a
// grid of Dff for the presets' (hidden, top_k) shapes, derives one Dff cap for this host (the
// rule is in src/moe/moe_tune.h) and writes it, with its evidence, to the calibration file.
// --backend cuda runs the CUDA Dff sweep instead (tools/util_cuda_tune.cc), keyed by the GPU.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/isa.h"
#include "core/parallel.h"
#include "core/read_bandwidth.h"
#include "core/strict_parse.h"
#include "core/sysinfo.h"
#include "kernels/precision.h"
#include "moe/calibration.h"
#include "moe/dispatch_policy.h"
#include "moe/moe_bench.h"
#include "moe/moe_tune.h"
#include "quant/format.h"
#include "tools/command.h"
#include "tools/util_cuda_bench.h"
#include "tools/util_cuda_tune.h"
#include "tools/util_flags.h"
#include "tools/util_report.h"
#include "tools/util_tune_report.h"

namespace moex::tools {
namespace {

struct TuneOptions {
  std::string backend = "cpu", bits = "4", output = "md";
  // Unset and set-but-empty differ: `--dffs ""` is an error, not the default grid.
  std::optional<std::string> threads, isa, precision, out, dffs, repeats;
  bool quick = false;
};

constexpr int kGroupSize = 64;
// Every grid point's pool stays under this (the whole process under ~4 GB).
constexpr int64_t kPoolLimitBytes = 3'000'000'000;

// The flags only the CPU tune has, rejected with --backend cuda.
void reject_cpu_only_flags(const TuneOptions& o) {
  if (o.threads) fail("tune: --threads is a CPU flag; it cannot be used with --backend cuda");
  if (o.isa) fail("tune: --isa is a CPU flag; it cannot be used with --backend cuda");
  if (o.precision) fail("tune: --precision is a CPU flag; it cannot be used with --backend cuda");
}

int run_tune(const TuneOptions& o) {
  const ReportFormat format = parse_report_format(o.output, "-o");
  const bool cuda = moe::parse_backend(lowercase(o.backend), "--backend") == moe::Backend::kCuda;
  if (cuda) {
    reject_cpu_only_flags(o);
    if (!cuda_built_in()) require_cuda_device("tune");  // throws: built without CUDA
  }
  std::vector<int> bits;
  for (int64_t b : parse_int_list(o.bits, "--bits", 2, 8)) {
    if (!quant::is_valid_bits(int(b)))
      fail("--bits: ", b, "; expected each one of 2, 3, 4, 5, 6, 8");
    if (std::find(bits.begin(), bits.end(), int(b)) == bits.end()) bits.push_back(int(b));
  }
  std::vector<int64_t> dffs = o.quick  ? moe::tune_quick_grid()
                              : cuda   ? cuda_default_dff_grid()
                                       : moe::tune_full_grid();
  if (o.dffs) {
    dffs = parse_int_list(*o.dffs, "--dffs", kGroupSize, moe::kMaxDffLimit);
    std::sort(dffs.begin(), dffs.end());
    dffs.erase(std::unique(dffs.begin(), dffs.end()), dffs.end());
    for (int64_t d : dffs)
      if (d % kGroupSize) fail("--dffs: ", d, " is not a multiple of the group size ", kGroupSize);
  }
  const int default_repeats = cuda ? (o.quick ? 5 : 15) : (o.quick ? 3 : 7);
  const int repeats =
      o.repeats ? int(parse_int_strict(*o.repeats, "--repeats", 1, 1000)) : default_repeats;
  if (o.out && o.out->empty()) fail("--out: empty path; expected a calibration file path");
  const std::string path = o.out ? *o.out : moe::default_calibration_path();
  if (cuda) {
    CudaTuneArgs ca;
    ca.bits = bits;
    ca.dffs = dffs;
    ca.repeats = repeats;
    ca.group_size = kGroupSize;
    ca.path = path;
    ca.path_is_default = !o.out;
    ca.shapes = tune_preset_shapes();
    ca.format = format;
    return run_tune_cuda(ca);
  }
  if (o.threads) set_num_threads(parse_threads_flag(*o.threads));
  if (o.isa) set_active_isa(parse_isa(lowercase(*o.isa), "--isa"));
  if (o.precision)
    kernels::set_active_precision(kernels::parse_precision(lowercase(*o.precision), "--precision"));
  moe::check_calibration_writable(path);  // before the long run, not after

  const ShapePresets shape_presets = tune_preset_shapes();
  moe::TuneArgs args;
  for (int b : bits)
    for (const auto& [key, names] : shape_presets)
      args.shapes.push_back({key.first, key.second, b});
  args.dffs = dffs;
  args.repeats = repeats;
  args.group_size = kGroupSize;
  // Each point's pool exceeds the last-level cache: 4 x L3 (2 x for --quick), at least 1 GB
  // (256 MB), at most kPoolLimitBytes; a single layer may exceed the target.
  const int64_t l3 = last_level_cache_bytes();
  args.pool_target_bytes =
      std::min(kPoolLimitBytes, o.quick ? std::max<int64_t>(256'000'000, 2 * l3)
                                        : std::max<int64_t>(1'000'000'000, 4 * l3));
  args.pool_limit_bytes = kPoolLimitBytes;
  args.log = [](const std::string& line) { std::fprintf(stderr, "tune: %s\n", line.c_str()); };
  const int64_t largest = moe::tune_largest_pool_bytes(args);
  const int64_t avail = moe::available_memory_bytes();
  if (avail > 0 && largest > avail * 3 / 4)
    fail("tune: the largest grid point needs a ", largest / 1e9, " GB weight pool, over 3/4 of ",
         "the available memory (", avail / 1e9, " GB); use a smaller --dff grid or --bits");

  const int threads = num_threads();
  const std::string isa = isa_name(active_isa());
  std::fprintf(stderr,
               "tune: %zu shapes x %zu Dff points, %d repeats, %d threads, %s, pools of %.2f GB "
               "(L3 %.0f MB)\n",
               args.shapes.size(), dffs.size(), repeats, threads, isa.c_str(),
               args.pool_target_bytes / 1e9, l3 / 1e6);
  const double t0 = now_seconds();
  const std::vector<moe::TunePoint> measured = moe::run_tune_grid(args);
  const double seconds = now_seconds() - t0;
  // A point whose ratio is within its run-to-run spread of 1.0 cannot say which path is
  // faster: the cap rule sees it as a tie, so noise alone never lowers the cap. The
  // calibration file keeps the measured ratios.
  const moe::HostCap cap = moe::derive_host_cap_with_ties(measured);

  moe::TuneHost host;
  host.backend = "cpu";
  host.hardware = cpu_model_name();
  host.threads = threads;
  host.isa = isa;
  host.precision = kernels::active_precision_label();
  host.moex_commit = moex_commit();
  host.date = utc_date_time();

  Report rep;
  rep.title = "moex tune";
  rep.header = {
      {"moex_commit", text_cell(host.moex_commit)},
      {"date", text_cell(host.date)},
      {"cpu", text_cell(host.hardware)},
      {"backend", text_cell(host.backend)},
      {"threads", integer_cell(threads)},
      {"isa", text_cell(isa)},
      {"precision", text_cell(kernels::active_precision_label())},
      {"dff_grid", text_cell(join_ints(dffs))},
      {"group_size", integer_cell(kGroupSize)},
      {"experts_per_layer", text_cell("2 x top_k (uniform random routing)")},
      {"pool_target_gb", number_cell(args.pool_target_bytes / 1e9, 2)},
      {"l3_mb", number_cell(l3 / 1e6, 0)},
      {"repeats", integer_cell(repeats)},
      {"seconds", number_cell(seconds, 1)},
      {"cap", integer_cell(cap.cap)},
      {"calibration_file", text_cell(path)},
  };
  add_tune_results(rep, measured, cap, shape_presets);
  rep.notes.push_back(str_cat("the dispatch policy uses this cap for backend cpu on '",
                              host.hardware, "' unless --max-dff or ", moe::kEnvFusedMoeMaxDff,
                              " is given"));
  if (o.out) {
    const std::string def = moe::default_calibration_path();
    if (def != path)
      rep.notes.push_back(str_cat("the policy reads ", def.empty() ? "no default path" : def,
                                  "; set ", moe::kEnvCalibration, "=", path, " to use this file"));
  }
  return finish_tune(rep, format, path,
                     moe::make_tune_entry(host, cap, moe::calibration_points(measured)));
}

std::function<int()> setup_tune(CLI::App& sub) {
  auto o = std::make_shared<TuneOptions>();
  sub.add_option("--backend", o->backend, "cpu | cuda")->capture_default_str();
  sub.add_option("--threads", o->threads, "threads, 1-1024 (default: all cores; cpu only)")
      ->type_name("INT");
  sub.add_option("--isa", o->isa, "scalar | avx2 | avx512 (default: the best available; cpu only)");
  sub.add_option("--precision", o->precision, kPrecisionHelp)->type_name("TIER");
  sub.add_flag("--quick", o->quick, "coarser Dff grid, fewer repeats, smaller pools (~1 minute)");
  sub.add_option("--out", o->out,
                 "calibration file (default: $MOEX_CALIBRATION, else "
                 "$XDG_CACHE_HOME/moex/calibration.json, else ~/.cache/moex/calibration.json)");
  sub.add_option("--bits", o->bits, "weight bits to tune, comma-separated")
      ->type_name("INT,...")
      ->capture_default_str();
  sub.add_option("--dff,--dffs", o->dffs,
                 "Dff grid, comma-separated multiples of 64 (default: built in, per backend)")
      ->type_name("INT,...");
  sub.add_option("--repeats", o->repeats,
                 "timed passes per arm and point (cpu: default 7, quick 3; cuda: 15, quick 5)")
      ->type_name("INT");
  sub.add_option("-o,--output", o->output, "md | csv | json")->capture_default_str();
  return [o] { return run_tune(*o); };
}

MOEX_REGISTER_COMMAND(tune, "tune",
                      "calibrate the fused-MoE Dff cap for this host (fused vs fallback per layer "
                      "over a Dff grid) and write the calibration file",
                      setup_tune);

}  // namespace
}  // namespace moex::tools
