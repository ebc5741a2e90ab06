// `moex tune`: the kernel-level per-host calibration. Times fused vs fallback per layer over a
// grid of Dff for the presets' (hidden, top_k) shapes, derives one Dff cap for this host (the
// rule is in src/moe/moe_tune.h) and writes it, with its evidence, to the calibration file.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/isa.h"
#include "core/parallel.h"
#include "core/read_bandwidth.h"
#include "core/strict_parse.h"
#include "core/sysinfo.h"
#include "model/presets.h"
#include "moe/calibration.h"
#include "moe/dispatch_policy.h"
#include "moe/moe_bench.h"
#include "moe/moe_tune.h"
#include "quant/format.h"
#include "tools/command.h"
#include "tools/util_report.h"

namespace moex::tools {
namespace {

struct TuneOptions {
  std::string backend = "cpu", threads, isa, out, bits = "4", dffs, repeats, output = "md";
  bool quick = false;
};

constexpr int kGroupSize = 64;
// Every grid point's pool stays under this (the whole process under ~4 GB).
constexpr int64_t kPoolLimitBytes = 3'000'000'000;

std::vector<int64_t> parse_list(const std::string& s, const char* flag, int64_t lo, int64_t hi) {
  std::vector<int64_t> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) v.push_back(parse_int_strict(item, flag, lo, hi));
  if (v.empty() || s.back() == ',')
    fail(flag, ": '", s, "'; expected a comma-separated list of integers");
  return v;
}

// The distinct (hidden, top_k) pairs of the real-shape presets, with the presets of each.
std::map<std::pair<int64_t, int64_t>, std::string> preset_shapes() {
  std::map<std::pair<int64_t, int64_t>, std::string> m;
  for (const auto& p : model::all_presets()) {
    if (p.tiny || p.experts <= 0) continue;
    std::string& names = m[{p.hidden, p.top_k}];
    names += (names.empty() ? "" : ", ") + p.name;
  }
  return m;
}

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

int run_tune(const TuneOptions& o) {
  const ReportFormat format = parse_report_format(o.output, "-o");
  if (moe::parse_backend(o.backend, "--backend") == moe::Backend::kCuda)
    fail("--backend cuda: the CUDA backend is not built into tune yet; use --backend cpu");
  std::vector<int> bits;
  for (int64_t b : parse_list(o.bits, "--bits", 2, 8)) {
    if (!quant::is_valid_bits(int(b)))
      fail("--bits: ", b, "; expected each one of 2, 3, 4, 5, 6, 8");
    if (std::find(bits.begin(), bits.end(), int(b)) == bits.end()) bits.push_back(int(b));
  }
  std::vector<int64_t> dffs = o.quick ? moe::tune_quick_grid() : moe::tune_full_grid();
  if (!o.dffs.empty()) {
    dffs = parse_list(o.dffs, "--dff", kGroupSize, moe::kMaxDffLimit);
    std::sort(dffs.begin(), dffs.end());
    dffs.erase(std::unique(dffs.begin(), dffs.end()), dffs.end());
    for (int64_t d : dffs)
      if (d % kGroupSize) fail("--dff: ", d, " is not a multiple of the group size ", kGroupSize);
  }
  const int repeats = o.repeats.empty() ? (o.quick ? 3 : 7)
                                        : int(parse_int_strict(o.repeats, "--repeats", 1, 1000));
  if (!o.threads.empty()) set_num_threads(int(parse_int_strict(o.threads, "--threads", 1, 4096)));
  if (!o.isa.empty()) set_active_isa(parse_isa(o.isa, "--isa"));
  const std::string path = o.out.empty() ? moe::default_calibration_path() : o.out;
  moe::check_calibration_writable(path);  // before the long run, not after

  const auto shape_presets = preset_shapes();
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
  const std::vector<moe::CalibrationPoint> grid = moe::calibration_points(measured);
  // A point whose ratio is within its run-to-run spread of 1.0 cannot say which path is
  // faster: the cap rule sees it as a tie (ratio 1.0), so noise alone never lowers the cap.
  // The calibration file keeps the measured ratios.
  std::vector<moe::CalibrationPoint> judged = grid;
  for (size_t i = 0; i < judged.size(); ++i)
    if (moe::within_noise(measured[i])) judged[i].ratio = 1.0;
  const moe::HostCap cap = moe::derive_host_cap(judged);

  moe::TuneHost host;
  host.backend = "cpu";
  host.hardware = cpu_model_name();
  host.threads = threads;
  host.isa = isa;
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
      {"dff_grid", text_cell(join(dffs))},
      {"group_size", integer_cell(kGroupSize)},
      {"experts_per_layer", text_cell("2 x top_k (uniform random routing)")},
      {"pool_target_gb", number_cell(args.pool_target_bytes / 1e9, 2)},
      {"l3_mb", number_cell(l3 / 1e6, 0)},
      {"repeats", integer_cell(repeats)},
      {"seconds", number_cell(seconds, 1)},
      {"cap", integer_cell(cap.cap)},
      {"calibration_file", text_cell(path)},
  };
  rep.columns = {"hidden",          "top_k",       "bits",  "dff",
                 "fused_us",        "fallback_us", "ratio", "fused_spread",
                 "fallback_spread", "within_noise"};
  for (const auto& m : measured) {
    const moe::CalibrationPoint& p = m.point;
    rep.rows.push_back({integer_cell(p.hidden), integer_cell(p.top_k), integer_cell(p.bits),
                        integer_cell(p.dff), number_cell(p.fused_us, 1),
                        number_cell(p.fallback_us, 1), number_cell(p.ratio, 3),
                        number_cell(m.fused_spread, 3), number_cell(m.fallback_spread, 3),
                        text_cell(moe::within_noise(m) ? "yes" : "no")});
  }
  rep.notes.push_back(
      "ratio = fallback_us / fused_us per layer call, medians (> 1: fused faster); spread = "
      "(max - min) / median over the repeats; within_noise: |ratio - 1| <= the larger spread");
  for (const auto& c : cap.shapes) {
    const auto it = shape_presets.find({c.shape.hidden, c.shape.top_k});
    rep.notes.push_back(str_cat("hidden ", c.shape.hidden, " top_k ", c.shape.top_k, " ",
                                c.shape.bits, "-bit",
                                it != shape_presets.end() ? " (" + it->second + ")" : "", ": ",
                                c.text, " -> shape cap ", c.cap));
  }
  rep.notes.push_back(str_cat("host ", cap.text));
  // A crossing next to a point within noise does not locate the crossover.
  auto noisy = [&](const moe::TuneShape& s, int64_t dff) {
    for (const auto& m : measured)
      if (m.point.hidden == s.hidden && m.point.top_k == s.top_k && m.point.bits == s.bits &&
          m.point.dff == dff)
        return moe::within_noise(m);
    return false;
  };
  for (const auto& c : cap.shapes)
    if (c.kind == moe::CrossoverKind::kCrossing && c.cap == cap.cap &&
        (noisy(c.shape, c.below_dff) || noisy(c.shape, c.above_dff)))
      rep.notes.push_back(
          str_cat("WARNING: the crossing that sets the cap (Dff ", c.below_dff, " -> ", c.above_dff,
                  ") has a point within run-to-run noise; re-run on an idle machine or with more "
                  "--repeats before trusting the cap"));
  rep.notes.push_back(
      "rule: per shape, the Dff where the ratio first falls below 1.0 (linear interpolation), "
      "or the largest grid Dff if fused never loses; the host cap is the smallest of them "
      "(details: src/moe/moe_tune.h)");
  rep.notes.push_back(str_cat("the dispatch policy uses this cap for backend cpu on '",
                              host.hardware, "' unless --max-dff or ", moe::kEnvFusedMoeMaxDff,
                              " is given"));
  if (!o.out.empty()) {
    const std::string def = moe::default_calibration_path();
    if (def != path)
      rep.notes.push_back(str_cat("the policy reads ", def.empty() ? "no default path" : def,
                                  "; set ", moe::kEnvCalibration, "=", path, " to use this file"));
  }
  const std::string text = render_report(rep, format);
  try {
    moe::save_tune_entry(path, moe::make_tune_entry(host, cap, grid));
  } catch (const Error&) {
    std::fputs(text.c_str(), stdout);  // keep the measurements even if the file is not written
    throw;
  }
  std::fputs(text.c_str(), stdout);
  std::fprintf(stderr, "tune: wrote cap %lld to %s\n", (long long)cap.cap, path.c_str());
  return 0;
}

std::function<int()> setup(CLI::App& sub) {
  auto o = std::make_shared<TuneOptions>();
  sub.add_option("--backend", o->backend, "cpu (cuda reserved)");
  sub.add_option("--threads", o->threads, "threads (default: all cores)");
  sub.add_option("--isa", o->isa, "scalar | avx2 | avx512 (default: the best available)");
  sub.add_flag("--quick", o->quick, "coarser Dff grid, fewer repeats, smaller pools (~1 minute)");
  sub.add_option("--out", o->out,
                 "calibration file (default: $MOEX_CALIBRATION, else "
                 "$XDG_CACHE_HOME/moex/calibration.json, else ~/.cache/moex/calibration.json)");
  sub.add_option("--bits", o->bits, "weight bits to tune, comma-separated (default 4)");
  sub.add_option("--dff", o->dffs, "Dff grid, comma-separated multiples of 64 (default: built in)");
  sub.add_option("--repeats", o->repeats, "timed passes per arm and point (default 7, quick 3)");
  sub.add_option("-o,--output", o->output, "md | csv | json");
  return [o] { return run_tune(*o); };
}

MOEX_REGISTER_COMMAND(tune, "tune",
                      "calibrate the fused-MoE Dff cap for this host (fused vs fallback per layer "
                      "over a Dff grid) and write the calibration file",
                      setup);

}  // namespace
}  // namespace moex::tools
