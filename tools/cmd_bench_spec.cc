// `moex bench-spec`: what speculative decoding by prompt lookup gives on one model and prompt.
// Measures, in one process: the time of a pass of k + 1 tokens against a decode step
// (k = 0..--max-draft), then interleaved repeats of plain greedy decoding, prompt lookup
// (--spec-* flags; --spec mtp: the checkpoint's multi-token-prediction module) and forced drafts (the plain run's own continuation, each draft token kept
// right with probability a, for each a of --forced); prints acceptance, tokens per pass and
// tokens/s against plain decoding, beside what the speed model predicts (docs/speculative.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "core/strict_parse.h"
#include "core/sysinfo.h"
#include "generate/engine_verifier.h"
#include "generate/forced_draft.h"
#include "generate/generator.h"
#include "generate/mtp_draft.h"
#include "generate/speculative.h"
#include "harness/stats.h"
#include "model/engine/engine.h"
#include "model/engine/run_setup.h"
#include "model/family_registry.h"
#include "tools/command.h"
#include "tools/util_flags.h"
#include "tools/util_spec.h"

namespace moex::tools {
namespace {

namespace eng = moex::model::engine;
using generate::TokenId;

struct BenchSpecFlags {
  std::string model;
  std::optional<std::string> prompt, prompt_file, prompt_ids, n, repeats, max_draft, forced,
      threads, precision, weights, kv_cache;
  SpecFlags spec;
};

struct RunOut {
  std::vector<TokenId> tokens;
  double seconds = 0;  // from the first token to the last (prefill excluded)
  generate::SpecStats stats;
  std::map<int64_t, int64_t> pass_sizes;   // tokens per pass -> passes
  std::vector<std::vector<float>> logits;  // the model's, per step (when kept)
  double draft_seconds = 0;  // the MTP module's drafting, inside `seconds`
  double module_prompt_seconds = 0;  // the MTP module over the prompt, with the prefill
};

// The largest |difference| between two runs' logits over their common steps (0: equal).
double max_logits_diff(const RunOut& a, const RunOut& b) {
  double m = 0;
  for (size_t i = 0; i < std::min(a.logits.size(), b.logits.size()); ++i)
    for (size_t j = 0; j < a.logits[i].size(); ++j)
      m = std::max(m, double(std::fabs(a.logits[i][j] - b.logits[i][j])));
  return m;
}

RunOut run_plain(eng::Engine& e, const std::vector<TokenId>& prompt, int64_t n,
                 bool keep_logits = false) {
  e.reset();
  generate::GenerationParams p;
  p.max_tokens = n;
  p.ignore_eos = true;
  generate::Generator g(p, {}, e.vocab(), prompt);
  RunOut r;
  generate::SequenceDriver d;
  d.decode = [&](TokenId t) { return e.decode(t); };
  d.context_full = [&] { return e.position() >= e.context(); };
  d.on_step = [&](const generate::Step& s, const float* l) {
    r.tokens.push_back(s.token);
    if (keep_logits) r.logits.emplace_back(l, l + e.vocab());
    return true;
  };
  const float* logits = e.prefill(prompt);
  const double t0 = now_seconds();
  const generate::RunResult rr = generate::run_sequence(g, logits, d);
  r.seconds = now_seconds() - t0;
  r.stats.passes = rr.decode_steps;
  r.stats.tokens = rr.decode_steps;
  return r;
}

// One speculative run after e.reset(): `driver` runs the passes (its verify counted per pass
// size here), `logits` are the prompt's (the caller's prefill), `drafter` drafts.
RunOut run_speculation(eng::Engine& e, const std::vector<TokenId>& prompt, int64_t n,
                       generate::SpecDriver d, const float* logits, generate::Drafter& drafter,
                       int64_t draft, bool keep_logits) {
  generate::GenerationParams p;
  p.max_tokens = n;
  p.ignore_eos = true;
  generate::Generator g(p, {}, e.vocab(), prompt);
  RunOut r;
  const auto verify = d.verify;
  d.verify = [&](const TokenId* t, int64_t k) {
    ++r.pass_sizes[k];
    return verify(t, k);
  };
  d.on_step = [&](const generate::Step& s, const float* l) {
    r.tokens.push_back(s.token);
    if (keep_logits) r.logits.emplace_back(l, l + e.vocab());
    return true;
  };
  const double t0 = now_seconds();
  r.stats = generate::run_speculative(g, logits, prompt, drafter, draft, e.vocab(), d).stats;
  r.seconds = now_seconds() - t0;
  return r;
}

RunOut run_spec(eng::Engine& e, const std::vector<TokenId>& prompt, int64_t n,
                generate::Drafter& drafter, int64_t draft, bool keep_logits = false) {
  e.reset();
  generate::EngineVerifier v(e, e.sequence());
  const float* logits = e.prefill(prompt);
  return run_speculation(e, prompt, n, v.driver(), logits, drafter, draft, keep_logits);
}

// With the checkpoint's MTP module as the drafter (it runs the prefill itself: the prompt's
// hidden states feed it).
RunOut run_mtp(eng::Engine& e, const std::vector<TokenId>& prompt, int64_t n, int64_t draft,
               bool keep_logits = false) {
  e.reset();
  generate::MtpSpeculator m(e, e.sequence());
  const float* logits = m.prefill(prompt.data(), int64_t(prompt.size()));
  RunOut r = run_speculation(e, prompt, n, m.driver(), logits, m, draft, keep_logits);
  r.draft_seconds = m.draft_seconds();
  r.module_prompt_seconds = m.module_prefill_seconds();
  return r;
}

// Median seconds of a pass of k + 1 tokens at the prompt's end, k = 0..max_draft, the k
// interleaved in each repeat; k = 0 is Engine::forward of one token (a decode step).
std::vector<double> pass_times(eng::Engine& e, const std::vector<TokenId>& prompt,
                               const std::vector<TokenId>& tokens, int64_t max_draft,
                               int64_t repeats) {
  std::vector<std::vector<double>> t(size_t(max_draft + 1));
  e.reset();
  e.prefill(prompt);
  const int64_t at = e.position();
  for (int64_t r = 0; r < repeats; ++r)
    for (int64_t k = 0; k <= max_draft; ++k) {
      const double t0 = now_seconds();
      if (k == 0)
        e.forward(tokens.data(), 1);
      else
        e.forward_every_row(e.sequence(), tokens.data(), k + 1);
      t[size_t(k)].push_back(now_seconds() - t0);
      e.truncate(at);
    }
  std::vector<double> med;
  for (auto& v : t) med.push_back(harness::median(v));
  return med;
}

std::string read_prompt_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("--prompt-file: cannot read ", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int run_bench_spec(const BenchSpecFlags& f) {
  if (f.threads) parse_threads_flag(*f.threads);
  eng::apply_cpu_settings(f.threads, std::nullopt, lowercase_opt(f.precision),
                          lowercase_opt(f.weights),
                          lowercase_opt(f.kv_cache));
  SpecFlags sf = f.spec;  // the ngram arm always runs: --spec is optional here
  if (!sf.spec) sf.spec = "ngram";
  const SpecSetup spec = spec_setup(sf);
  const int64_t n = f.n ? parse_int_strict(*f.n, "-n", 2, 1 << 20) : 64;
  const int64_t repeats = f.repeats ? parse_int_strict(*f.repeats, "--repeats", 1, 1000) : 3;
  const int64_t max_draft =
      f.max_draft ? parse_int_strict(*f.max_draft, "--max-draft", 1, generate::kMaxDraftTokens) : 8;
  std::vector<double> forced = {1.0};
  if (f.forced) {
    forced.clear();
    for (const std::string& s :
         split_list_flag(*f.forced, "--forced", "an acceptance rate in [0, 1]")) {
      const double a = parse_double_strict(s, "--forced");
      if (!(a >= 0 && a <= 1)) fail("--forced: expected rates in [0, 1], got ", s);
      forced.push_back(a);
    }
  }
  if (f.prompt && f.prompt_file) fail("give -p or --prompt-file, not both");
  std::optional<std::string> text = f.prompt;
  if (f.prompt_file) text = read_prompt_file(*f.prompt_file);
  const eng::Prompt prompt = eng::resolve_prompt(f.model, text, f.prompt_ids);
  const model::ModelConfig cfg = model::load_model_config(f.model);
  const int64_t context = eng::context_for(cfg, int64_t(prompt.ids.size()), n + max_draft + 1);
  eng::EngineOptions options = eng::engine_options(std::nullopt, std::nullopt, context);
  options.measure_policy = false;  // the runs compare paths, not policies
  options.mtp = spec.mtp;
  auto engine = eng::Engine::open(f.model, options);
  eng::Engine& e = *engine;

  std::printf(
      "# bench-spec: %s, prompt %zu tokens, %lld tokens per run, %lld repeats, "
      "threads %d, %s\n",
      f.model.c_str(), prompt.ids.size(), (long long)n, (long long)repeats, num_threads(),
      cpu_model_name().c_str());
  // Warm-up, the forced drafts' script and the logits every arm's first run is compared with.
  const RunOut warm = run_plain(e, prompt.ids, n, true);
  const std::vector<double> tp = pass_times(e, prompt.ids, warm.tokens, max_draft, 5 * repeats);
  std::printf("\n| pass of | median ms | / decode step |\n|---|---|---|\n");
  for (size_t k = 0; k < tp.size(); ++k)
    std::printf("| %zu token%s | %.2f | %.2f |\n", k + 1, k ? "s" : "", tp[k] * 1e3, tp[k] / tp[0]);

  struct Arm {
    std::string name;
    double a = -1;  // forced rate; -1: prompt lookup; -2: plain; -3: the MTP module
    std::vector<double> tps;
    RunOut last;
    bool identical = true;
    double logits_diff = 0;  // max |diff| from plain decoding's logits in the first repeat
  };
  std::vector<Arm> arms;
  auto arm_of = [](std::string name, double a) {
    Arm arm;
    arm.name = std::move(name);
    arm.a = a;
    return arm;
  };
  arms.push_back(arm_of("plain", -2));
  arms.push_back(spec.mtp ? arm_of("mtp", -3) : arm_of("ngram", -1));
  for (double a : forced) arms.push_back(arm_of("forced a=" + std::to_string(a).substr(0, 4), a));
  // Each repeat runs every arm once, starting one arm later than the repeat before, so that
  // no arm always runs first (after the pass timings) or last.
  for (int64_t r = 0; r < repeats; ++r)
    for (size_t i = 0; i < arms.size(); ++i) {
      Arm& arm = arms[(i + size_t(r)) % arms.size()];
      RunOut out;
      if (arm.a == -2) {
        out = run_plain(e, prompt.ids, n, r == 0);
      } else if (arm.a == -3) {
        out = run_mtp(e, prompt.ids, n, spec.draft, r == 0);
      } else if (arm.a == -1) {
        generate::NgramDrafter d(spec.ngram);
        out = run_spec(e, prompt.ids, n, d, spec.draft, r == 0);
      } else {
        // A seed per repeat: the wrong drafts fall elsewhere in each run.
        generate::ForcedDrafter d(warm.tokens, int64_t(prompt.ids.size()), arm.a, e.vocab(),
                                  uint64_t(12345 + r));
        out = run_spec(e, prompt.ids, n, d, spec.draft, r == 0);
      }
      if (r == 0) arm.logits_diff = max_logits_diff(out, warm);
      out.logits.clear();
      arm.identical = arm.identical && out.tokens == warm.tokens;
      arm.tps.push_back(double(out.stats.tokens) / out.seconds);
      arm.last = out;
    }
  const double plain_tps = harness::median(arms[0].tps);
  std::printf(
      "\nspeculative %s; tokens/s = tokens after the first / time after the prefill\n\n",
      spec.label().c_str());
  std::printf(
      "| arm | acceptance | tokens/pass | tok/s median (min-max) | speed-up | model "
      "| same tokens | logits max abs diff |\n|---|---|---|---|---|---|---|---|\n");
  for (const Arm& arm : arms) {
    const auto [mn, mx] = std::minmax_element(arm.tps.begin(), arm.tps.end());
    const double med = harness::median(arm.tps);
    // The model: tokens per pass over the passes' mean time in decode steps.
    std::string model = "1.00";
    if (arm.a != -2) {
      double steps = 0;
      int64_t passes = 0;
      for (const auto& [size, count] : arm.last.pass_sizes) {
        steps += double(count) * tp[size_t(std::min<int64_t>(size - 1, max_draft))] / tp[0];
        passes += count;
      }
      steps += arm.last.draft_seconds / tp[0];  // the MTP module's drafts, in decode steps
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.2f",
                    passes ? arm.last.stats.tokens_per_pass() / (steps / double(passes)) : 0.0);
      model = buf;
    }
    std::printf(
        "| %s | %s | %.2f | %.1f (%.1f-%.1f) | %.2f | %s | %s | %.3g |\n", arm.name.c_str(),
        arm.a == -2
            ? "-"
            : (std::to_string(100 * arm.last.stats.acceptance()).substr(0, 4) + "%").c_str(),
        arm.a == -2 ? 1.0 : arm.last.stats.tokens_per_pass(), med, *mn, *mx, med / plain_tps,
        model.c_str(), arm.identical ? "yes" : "NO", arm.logits_diff);
  }
  for (const Arm& arm : arms)
    if (arm.a == -3 && arm.last.stats.passes > 0)
      std::printf("\nmtp: drafting %.2f ms per pass (%.2f decode steps) in the last repeat; the "
                  "model column counts it. The module over the prompt (with the prefill, not "
                  "in tok/s): %.1f ms\n",
                  1e3 * arm.last.draft_seconds / double(arm.last.stats.passes),
                  arm.last.draft_seconds / double(arm.last.stats.passes) / tp[0],
                  1e3 * arm.last.module_prompt_seconds);
  return 0;
}

CommandSetup bench_spec_setup = [](CLI::App& sub) -> std::function<int()> {
  auto f = std::make_shared<BenchSpecFlags>();
  sub.add_option("-m,--model", f->model, "model directory")->type_name("DIR")->required();
  sub.add_option("-p,--prompt", f->prompt, "prompt text")->check(non_empty());
  sub.add_option("--prompt-file", f->prompt_file, "prompt text from a file")
      ->type_name("FILE")
      ->check(non_empty());
  sub.add_option("--prompt-ids", f->prompt_ids, "prompt as token ids (wins over text)")
      ->type_name("IDS");
  sub.add_option("-n", f->n, "tokens per run, 2-1048576 (default 64)")->type_name("INT");
  sub.add_option("--repeats", f->repeats, "interleaved repeats of every arm (default 3)")
      ->type_name("INT");
  sub.add_option("--max-draft", f->max_draft, "pass sizes timed: 1 + 0..K tokens (default 8)")
      ->type_name("K");
  sub.add_option("--forced", f->forced,
                 "forced-draft arms: acceptance rates in [0, 1], comma-separated (default 1)")
      ->type_name("A,...");
  add_cpu_run_options(sub, &f->threads, &f->precision, &f->weights, nullptr, &f->kv_cache);
  add_spec_options(sub, f->spec);
  return [f] { return run_bench_spec(*f); };
};

MOEX_REGISTER_COMMAND(bench_spec, "bench-spec",
                      "speculative decoding (prompt lookup, forced drafts) against plain decoding",
                      bench_spec_setup);

}  // namespace
}  // namespace moex::tools
