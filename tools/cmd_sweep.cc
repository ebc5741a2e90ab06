// `moex sweep`: the model-level Dff sweep (the prior system's harness, made honest). For each model
// the fallback and fused arms run as separate `moex bench-decode` processes, interleaved
// A, B, A, B; every finished run is appended to the raw CSV at once (fsync), --resume skips
// recorded runs (refusing other measurement settings), the summary never computes a ratio
// from an invalid run, and any failed run makes the exit code 1.
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/atomic_write.h"
#include "core/error.h"
#include "core/sysinfo.h"
#include "harness/sweep_run.h"
#include "harness/sweep_settings.h"
#include "harness/sweep_summary.h"
#include "moe/dispatch_policy.h"
#include "moe/moe_backend.h"
#include "tools/command.h"
#include "tools/util_bench_json.h"
#include "tools/util_flags.h"
#include "tools/util_subprocess.h"

namespace moex::tools {
namespace {

struct SweepOptions {
  std::string models;
  int layers = 0;
  std::string prompt = "Hello, how are you today?";
  int64_t n = 100;
  int64_t warmup = 20;
  int repeats = 3;
  int threads = 0;
  std::string out = "sweep.csv";
  bool resume = false;
  std::string models_dir = "models";
  std::string bench_exe;  // testing hook: a stand-in for `moex`
  int64_t cap = 0;        // cap to judge; 0 = the backend default printed by bench-decode
  std::string backend = "cpu";  // where each run's MoE layers run (bench-decode --backend)
};

bool is_dir(const std::string& p) { return std::filesystem::is_directory(p); }

// A preset name becomes a synthetic checkpoint under models_dir, built once: make-model
// --reuse keeps a complete one and rebuilds one left incomplete (a killed or failed build).
std::string model_dir_for(const std::string& m, const SweepOptions& o, const std::string& exe) {
  if (is_dir(m)) return m;
  std::string dir = o.models_dir + "/" + m + (o.layers > 0 ? "-L" + std::to_string(o.layers) : "");
  std::vector<std::string> argv = {exe, "make-model", "--preset", m, "--out", dir, "--reuse"};
  if (o.layers > 0) argv.insert(argv.end(), {"--layers", std::to_string(o.layers)});
  std::fprintf(stderr, "sweep: synthetic checkpoint %s (built unless complete)\n", dir.c_str());
  auto r = run_process(argv);
  if (r.exit_code != 0)
    fail("sweep: '", m, "' is neither a directory nor a preset make-model could build (exit code ",
         r.exit_code, ")");
  return dir;
}

// Reads every weight file once so that no arm's first run pays for disk reads the other arm's
// runs do not (the prior system's noise was partly this: a cold run against warm ones). Returns GB read.
double warm_page_cache(const std::string& dir) {
  std::vector<char> buf(size_t(8) << 20);
  double gb = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".safetensors") continue;
    std::ifstream f(e.path(), std::ios::binary);
    while (f.read(buf.data(), std::streamsize(buf.size())) || f.gcount() > 0) gb += double(f.gcount()) / 1e9;
  }
  return gb;
}

std::string key(const std::string& model, harness::Arm arm, int run) {
  return model + "|" + harness::arm_name(arm) + "|" + std::to_string(run);
}

harness::SweepRun measure(const std::string& label, const std::string& dir, harness::Arm arm, int run,
                          const SweepOptions& o, const std::string& exe) {
  std::vector<std::string> argv = {exe, "bench-decode", "-m", dir, "-p", o.prompt, "-n",
                                   std::to_string(o.n), "--warmup-tokens", std::to_string(o.warmup),
                                   "--repeats", "1", "--fused",
                                   arm == harness::Arm::kFused ? "on" : "off", "-o", "json"};
  if (o.threads > 0) argv.insert(argv.end(), {"--threads", std::to_string(o.threads)});
  argv.insert(argv.end(), {"--backend", o.backend});
  auto r = run_process(argv);
  harness::SweepRun run_row;
  if (r.exit_code != 0) {
    run_row.error = str_cat("bench-decode exit code ", r.exit_code);
  } else {
    try {
      run_row = parse_bench_decode_json(r.stdout_text);
    } catch (const Error& e) {
      run_row.error = str_cat("unreadable bench-decode output: ", e.what());
    }
  }
  run_row.model = label;
  run_row.arm = arm;
  run_row.run = run;
  run_row.requested_tokens = o.n;
  if (run_row.date.empty()) run_row.date = utc_date_time();
  return run_row;
}

// The settings file beside --out: written for a new sweep; on --resume the recorded settings
// (or, for a CSV from before settings files, its rows) must match this sweep's.
void check_or_record_settings(const SweepOptions& o, const std::vector<harness::SweepRun>& rows) {
  harness::SweepSettings now;
  now.prompt = o.prompt;
  now.n = o.n;
  now.warmup_tokens = o.warmup;
  now.threads = o.threads;
  now.backend = o.backend;
  const std::string path = harness::settings_path_for(o.out);
  const std::optional<harness::SweepSettings> recorded =
      std::filesystem::exists(o.out) ? harness::read_settings(path) : std::nullopt;
  std::optional<std::string> diff =
      recorded ? harness::settings_mismatch(*recorded, now) : harness::rows_mismatch(rows, now);
  if (diff)
    fail("sweep --resume: ", o.out, ": ", *diff, " (", recorded ? path : "its rows",
         "); resume with the same settings or choose another --out");
  if (!recorded) harness::write_settings(path, now);
}

int run_sweep(SweepOptions o) {
  const moe::Backend backend = moe::parse_backend(lowercase(o.backend), "--backend");
  o.backend = moe::backend_name(backend);
  if (backend == moe::Backend::kCuda) {
    if (o.threads > 0) fail("sweep: --threads is a CPU flag; it cannot be used with --backend cuda");
    if (o.bench_exe.empty()) moe::moe_backend(backend);  // throws: not built in, or no device
  }
  const std::string exe = o.bench_exe.empty() ? self_exe_path() : o.bench_exe;
  if (o.out.empty()) fail("--out: empty path; expected the raw CSV file");
  if (o.prompt.empty()) fail("-p: empty prompt; expected text to decode after");
  if (!o.resume && std::filesystem::exists(o.out))
    fail("sweep: ", o.out, " exists; pass --resume to continue it or choose another --out");
  const auto models = split_list_flag(o.models, "-m", "checkpoint directories or preset names");
  const std::vector<harness::SweepRun> previous = harness::read_runs(o.out);
  check_or_record_settings(o, previous);
  std::set<std::string> done;
  for (const auto& r : previous) done.insert(key(r.model, r.arm, r.run));
  const int total = int(models.size()) * o.repeats * 2;
  int finished = 0, skipped = 0;
  const double t0 = now_seconds();
  for (size_t mi = 0; mi < models.size(); ++mi) {
    const std::string& spec = models[mi];
    std::string dir = model_dir_for(spec, o, exe);
    // The label is the checkpoint's directory name (a preset's name for built presets).
    std::filesystem::path norm = std::filesystem::path(dir).lexically_normal();
    if (norm.filename().empty()) norm = norm.parent_path();
    const std::string m = norm.filename().string();
    const double t_warm = now_seconds();
    const double gb = warm_page_cache(dir);
    std::fprintf(stderr, "sweep: read %s once (%.2f GB, %.1f s) so every run starts with it in the page cache\n",
                 dir.c_str(), gb, now_seconds() - t_warm);
    for (int run = 1; run <= o.repeats; ++run) {
      for (harness::Arm arm : {harness::Arm::kFallback, harness::Arm::kFused}) {
        if (done.count(key(m, arm, run))) {
          ++skipped;
          continue;
        }
        double elapsed = now_seconds() - t0;
        int measured = finished;
        double left = measured > 0 ? elapsed / measured * (total - skipped - measured) : 0;
        std::fprintf(stderr, "sweep: [%zu/%zu] %s arm %s run %d/%d, %.0fs elapsed, ~%.0fs left\n",
                     mi + 1, models.size(), m.c_str(), harness::arm_name(arm), run, o.repeats, elapsed,
                     left);
        harness::append_run(o.out, measure(m, dir, arm, run, o, exe));
        ++finished;
      }
    }
  }
  auto runs = harness::read_runs(o.out);
  auto summary = harness::summarize(runs);
  std::string summary_path = o.out.substr(0, o.out.rfind(".csv")) + ".summary.csv";
  write_file_atomic(summary_path, harness::summary_csv(summary), "sweep summary");
  auto cross = harness::find_crossover(summary);
  int64_t cap = o.cap > 0 ? o.cap : default_cap_for_runs(runs);
  std::printf("%s", harness::summary_csv(summary).c_str());
  if (cross.found)
    std::printf("crossover: Dff %.0f (between %lld and %lld), 95%% interval [%.0f, %.0f], %.0f%% of "
                "bootstrap replicates cross\n",
                cross.dff, (long long)cross.below_dff, (long long)cross.above_dff, cross.ci.lo,
                cross.ci.hi, 100 * cross.replicate_fraction);
  else
    std::printf("crossover: none (%s)\n", cross.note.c_str());
  if (cap > 0)
    std::printf("verdict vs cap %lld: %s\n", (long long)cap,
                harness::judge_cap(summary, cross, cap).text.c_str());
  else
    std::printf("verdict: none (no run reported the default cap; pass --cap)\n");
  if (cap > 0)
    for (const auto& s : summary)
      if (const std::string line = harness::auto_pick_line(s, cap); !line.empty())
        std::printf("auto policy: %s\n", line.c_str());
  std::printf("raw runs: %s (%d measured now, %d resumed)\nsummary: %s\n", o.out.c_str(), finished,
              skipped, summary_path.c_str());
  // A failed or invalid run leaves its model without a ratio: the sweep did not do its job.
  int invalid = 0;
  std::string first;
  for (const auto& r : runs)
    if (const auto why = harness::invalid_reason(r); why && invalid++ == 0)
      first = str_cat(r.model, " ", harness::arm_name(r.arm), " run ", r.run, ": ", *why);
  if (invalid > 0) {
    std::fprintf(stderr,
                 "sweep: %d of %zu runs failed or are invalid (first: %s); their models "
                 "have no ratio\n",
                 invalid, runs.size(), first.c_str());
    return 1;
  }
  return 0;
}

std::function<int()> setup_sweep(CLI::App& sub) {
  auto o = std::make_shared<SweepOptions>();
  sub.add_option("-m,--models", o->models,
                 "checkpoint directories or preset names, comma-separated")
      ->type_name("LIST")
      ->required();
  sub.add_option("--layers", o->layers,
                 "layer count for presets (fit memory; default: the preset's)")
      ->check(CLI::Range(1, 1000));
  sub.add_option("-p,--prompt", o->prompt, "prompt")->capture_default_str();
  sub.add_option("-n", o->n, "decode tokens per run")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  sub.add_option("--warmup-tokens", o->warmup, "warm-up tokens per run")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  sub.add_option("--repeats", o->repeats, "runs per arm")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  sub.add_option("--threads", o->threads, "threads per run (default: all cores)")
      ->check(CLI::Range(1, kMaxThreads));
  sub.add_option("--out", o->out, "raw CSV (appended run by run; settings in OUT.settings.json)")
      ->type_name("FILE")
      ->capture_default_str();
  sub.add_flag("--resume", o->resume,
               "skip runs already in --out (same -n, -p, --warmup-tokens, --threads, --backend)");
  sub.add_option("--models-dir", o->models_dir, "where preset checkpoints are built")
      ->type_name("DIR")
      ->capture_default_str();
  sub.add_option("--cap", o->cap, "cap to judge (default: the backend default)")->check(CLI::Range(1, 1 << 24));
  sub.add_option("--backend", o->backend,
                 "where each run's MoE layers run: cpu (default) or cuda (bench-decode --backend)")
      ->capture_default_str();
  sub.add_option("--bench-exe", o->bench_exe, "executable to run instead of moex (tests)")->group("");
  return [o] { return run_sweep(*o); };
}

}  // namespace

MOEX_REGISTER_COMMAND(sweep, "sweep", "model-level fused vs fallback Dff sweep with crossover and verdict",
                      setup_sweep);

}  // namespace moex::tools
