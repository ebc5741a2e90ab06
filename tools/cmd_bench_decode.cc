// `moex bench-decode`: greedy decode throughput of one model, in one process: warm-up, then
// `--repeats` measured passes per arm (arms interleaved A, B, A, B with --fused both), each
// a timed prefill followed by EXACTLY n timed single-token decode steps (EOS ignored). Reports
// every pass, median/min/max, the path counters of the measured decode steps, peak memory and
// the host facts; md, csv or json (the json is what `moex sweep` reads).
#include <algorithm>
#include <cmath>
#include <array>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "backend/kv_cache_type.h"
#include "core/error.h"
#include "core/isa.h"
#include "core/parallel.h"
#include "core/strict_parse.h"
#include "core/sysinfo.h"
#include "harness/stats.h"
#include "kernels/precision.h"
#include "model/engine/engine.h"
#include "model/engine/run_setup.h"
#include "model/family_registry.h"
#include "backend/cpu/softmax.h"
#include "moe/dispatch_policy.h"
#include "moe/moe_tune.h"
#include "tools/command.h"
#include "tools/util_expert_parallel.h"
#include "tools/util_flags.h"
#include "tools/util_progress.h"
#include "tools/util_report.h"

namespace moex::tools {
namespace {

namespace eng = moex::model::engine;
using nlohmann::json;

constexpr const char* kDefaultPrompt = "Hello, how are you today?";

struct BenchFlags {
  std::string model;
  std::string prompt = kDefaultPrompt;
  std::optional<std::string> prompt_ids, prompt_tokens, n, warmup, repeats, fused, max_dff,
      threads, precision, weights, kv_cache, isa;
  eng::BackendFlags backends;  // --backend, --experts-on, --n-cpu-moe
  std::string output = "md";
  ExpertParallelFlags expert_parallel;
};

struct Counts {
  int64_t fused = 0, fallback = 0;
  std::map<std::string, int64_t> reasons;
  void add(const moe::PathCounters& c) {
    fused += c.fused_calls();
    fallback += c.fallback_calls();
    for (int r = 0; r < moe::kNumDeclineReasons; ++r)
      if (int64_t v = c.fallback_calls(moe::DeclineReason(r)))
        reasons[moe::decline_reason_name(moe::DeclineReason(r))] += v;
  }
  std::string reasons_text() const {
    std::string s;
    for (const auto& [k, v] : reasons) s += (s.empty() ? "" : ";") + k + "=" + std::to_string(v);
    return s;
  }
  json to_json() const {
    json r = json::object();
    for (const auto& [k, v] : reasons) r[k] = v;
    return {{"fused_calls", fused}, {"fallback_calls", fallback}, {"fallback_reasons", r}};
  }
};

struct Pass {
  int repeat = 0;
  int64_t prompt_tokens = 0, generated = 0;
  double prefill_s = 0, decode_s = 0;
  Counts decode_counts, prefill_counts;
  int64_t expert_bytes = 0;  // routed-expert bytes this process read in the decode steps
  // Expert parallelism, decode steps only: this rank's collectives and the steps' imbalance.
  dist::CollectiveStats comm;
  std::vector<double> imbalance;
  double prefill_tps() const { return double(prompt_tokens) / std::max(prefill_s, 1e-12); }
  double decode_tps() const { return double(generated) / std::max(decode_s, 1e-12); }
};

struct Arm {
  std::string name;  // "on" | "off" | "auto"
  moe::FusedSettings settings;
  std::vector<Pass> passes;
  Counts counts;  // decode steps of all measured passes
  eng::DecodeProfile profile;  // decode steps of all measured passes
  eng::DecodeProfile prefill_profile;  // prefills of all measured passes, per prompt token
  std::string decision;  // first MoE layer's decode decision
  std::vector<double> tps() const {
    std::vector<double> v;
    for (const auto& p : passes) v.push_back(p.decode_tps());
    return v;
  }
};

// One pass: reset, timed prefill, then exactly `n` timed greedy decode steps.
Pass run_pass(eng::Engine& e, const std::vector<int32_t>& prompt, int64_t n,
              dist::Collective* collective = nullptr) {
  Pass p;
  e.reset();
  e.counters().reset();
  double t = now_seconds();
  const float* logits = e.prefill(prompt);
  p.prefill_s = now_seconds() - t;
  p.prompt_tokens = int64_t(prompt.size());
  p.prefill_counts.add(e.counters());
  e.counters().reset();
  if (collective) {
    collective->reset_stats();
    e.reset_expert_parallel_stats();
  }
  int32_t tok = int32_t(::moex::ops::argmax(logits, e.vocab()));
  t = now_seconds();
  for (int64_t i = 0; i < n; ++i) {
    logits = e.decode(tok);
    tok = int32_t(::moex::ops::argmax(logits, e.vocab()));
  }
  p.decode_s = now_seconds() - t;
  p.generated = n;
  p.decode_counts.add(e.counters());
  p.expert_bytes = e.counters().routed_expert_bytes_read();
  if (collective) {
    p.comm = collective->stats();
    p.imbalance = e.expert_parallel_stats()->step_imbalance;
  }
  return p;
}

// Per op group of the measured decode steps: ms per token, share of the step, weight MB read
// per token and the GB/s that makes.
struct ProfileRow {
  const char* op;
  double ms_per_token, share, mb_per_token, gbps;
};
std::vector<ProfileRow> profile_rows(const eng::DecodeProfile& p,
                                     const std::array<int64_t, eng::kNumDecodeOps>& bytes) {
  std::vector<ProfileRow> rows;
  const double total = p.total_seconds();
  if (p.steps == 0 || total <= 0) return rows;
  for (int i = 0; i < eng::kNumDecodeOps; ++i) {
    const double s = p.seconds[size_t(i)] / double(p.steps);
    if (s <= 0) continue;
    const double b = double(bytes[size_t(i)]);
    rows.push_back({eng::decode_op_name(eng::DecodeOp(i)), s * 1e3, p.seconds[size_t(i)] / total,
                    b / 1e6, b > 0 ? b / s / 1e9 : 0.0});
  }
  std::sort(rows.begin(), rows.end(),
            [](const ProfileRow& x, const ProfileRow& y) { return x.ms_per_token > y.ms_per_token; });
  return rows;
}

// --expert-parallel: every rank's figures of the measured decode steps, gathered to rank 0.
struct ExpertParallelReport {
  std::vector<std::string> lines;  // for the markdown notes
  json data;
};

ExpertParallelReport expert_parallel_report(ExpertParallelRun& ep, const eng::Engine& e,
                                            const std::vector<Arm>& arms) {
  // Per rank: decode tok/s (median over every measured pass), routed-expert bytes read per
  // token, collective bytes (sent + received) and seconds per token, resident checkpoint
  // bytes, bytes populated at open, experts owned in the first MoE layer, ranges populated.
  std::vector<double> tps, imbalance;
  int64_t tokens = 0, expert_bytes = 0;
  dist::CollectiveStats comm;
  double decode_s = 0;
  for (const Arm& a : arms)
    for (const Pass& p : a.passes) {
      tps.push_back(p.decode_tps());
      tokens += p.generated;
      decode_s += p.decode_s;
      expert_bytes += p.expert_bytes;
      comm.calls += p.comm.calls;
      comm.bytes_sent += p.comm.bytes_sent;
      comm.bytes_received += p.comm.bytes_received;
      comm.seconds += p.comm.seconds;
      imbalance.insert(imbalance.end(), p.imbalance.begin(), p.imbalance.end());
    }
  const eng::ExpertParallelStats st = *e.expert_parallel_stats();
  const model::WeightBytes& wb = e.weight_bytes();
  const double t = double(std::max<int64_t>(tokens, 1));
  // Every rank reads the replicated weights (all but the routed and shared experts), its own
  // routed experts (measured) and the shared experts of the layers it runs them for.
  const double weight_per_token = double(wb.per_token - wb.routed_experts - wb.shared_experts) +
                                  double(expert_bytes) / t + double(wb.shared_experts) * st.shared_share;
  const std::vector<double> mine = {
      harness::median(tps),
      double(expert_bytes) / t,
      weight_per_token,
      double(comm.bytes_sent + comm.bytes_received) / t,
      comm.seconds / t,
      decode_s > 0 ? comm.seconds / decode_s : 0.0,
      double(e.resident_weight_bytes()),
      double(st.bytes_read_at_open),
      double(ep.placement().owned_count(ep.rank(), st.first_moe_layer)),
      double(st.ranges_read_at_open)};
  const std::vector<double> all = ep.collective().gather_to_root(mine);
  ExpertParallelReport r;
  if (!ep.root()) return r;
  const size_t w = mine.size();
  json ranks = json::array();
  double total_weight = 0, total_comm = 0;
  for (int k = 0; k < ep.ranks(); ++k) {
    const double* v = all.data() + size_t(k) * w;
    total_weight += v[2];
    total_comm += v[3];
    ranks.push_back({{"rank", k}, {"median_decode_tps", v[0]}, {"routed_expert_bytes_per_token", v[1]},
                     {"weight_bytes_per_token", v[2]}, {"comm_bytes_per_token", v[3]},
                     {"comm_seconds_per_token", v[4]}, {"comm_share_of_decode", v[5]},
                     {"resident_checkpoint_bytes", v[6]}, {"checkpoint_bytes_read_at_open", v[7]},
                     {"experts_owned_first_moe_layer", v[8]},
                     {"checkpoint_ranges_read_at_open", v[9]}});
    r.lines.push_back(str_cat(
        "expert parallel rank ", k, ": ", number_cell(v[0], 2).text, " tok/s; weights read ",
        number_cell(v[2] / 1e6, 2).text, " MB/token (routed experts ", number_cell(v[1] / 1e6, 2).text,
        " MB); collective ", number_cell(v[3] / 1e3, 1).text, " KB/token, ",
        number_cell(v[4] * 1e3, 3).text, " ms/token (", number_cell(100 * v[5], 1).text,
        "% of decode); checkpoint resident ", eng::format_bytes(int64_t(v[6])), ", read at open ",
        eng::format_bytes(int64_t(v[7])), "; owns ", int64_t(v[8]), " experts of the first MoE layer"));
  }
  const double imb_median = imbalance.empty() ? 0.0 : harness::median(imbalance);
  const double imb_max = imbalance.empty() ? 0.0 : *std::max_element(imbalance.begin(), imbalance.end());
  r.lines.push_back(str_cat("expert parallel total over ", ep.ranks(), " ranks (",
                            ep.placement().description(), "): weights read ",
                            number_cell(total_weight / 1e6, 2).text, " MB/token, collective ",
                            number_cell(total_comm / 1e3, 1).text,
                            " KB/token; imbalance (max/mean experts run per rank per step) median ",
                            number_cell(imb_median, 3).text, ", max ", number_cell(imb_max, 3).text,
                            " over ", imbalance.size(), " steps"));
  r.data = {{"ranks", ep.ranks()}, {"placement", ep.placement().description()}, {"per_rank", ranks},
            {"total_weight_bytes_per_token", total_weight}, {"total_comm_bytes_per_token", total_comm},
            {"imbalance_median", imb_median}, {"imbalance_max", imb_max},
            {"imbalance_steps", imbalance.size()}};
  return r;
}

double stat(const std::vector<double>& v, int which) {  // 0 median, 1 min, 2 max
  if (which == 1) return *std::min_element(v.begin(), v.end());
  if (which == 2) return *std::max_element(v.begin(), v.end());
  return harness::median(v);
}

int run_bench(const BenchFlags& f) {
  if (f.threads) parse_threads_flag(*f.threads);  // the bound and message of every command
  ExpertParallelRun* ep = ExpertParallelRun::start(f.expert_parallel, f.model);
  dist::Collective* collective = ep ? &ep->collective() : nullptr;
  eng::apply_cpu_settings(f.threads, lowercase_opt(f.isa), lowercase_opt(f.precision),
                          lowercase_opt(f.weights),
                          lowercase_opt(f.kv_cache));
  require_mapped_weights(ep);
  const int64_t n = f.n ? parse_int_strict(*f.n, "-n", 1, int64_t{1} << 24) : 100;
  const int64_t warmup =
      f.warmup ? parse_int_strict(*f.warmup, "--warmup-tokens", 0, int64_t{1} << 24) : 20;
  const int repeats = f.repeats ? int(parse_int_strict(*f.repeats, "--repeats", 1, 1000)) : 3;
  const ReportFormat fmt = parse_report_format(f.output, "-o");
  const std::string fused = lowercase(f.fused.value_or("auto"));
  std::vector<std::string> arm_names;
  if (fused == "both")
    arm_names = {"off", "on"};  // A = fallback, B = fused
  else if (fused == "auto" || fused == "on" || fused == "off")
    arm_names = {fused};
  else
    fail("--fused: '", fused, "' is not a mode; expected auto, on, off or both");

  const model::ModelConfig cfg = model::load_model_config(f.model);
  eng::Prompt prompt;
  if (f.prompt_tokens) {
    if (f.prompt_ids) fail("--prompt-tokens and --prompt-ids cannot be used together");
    // context_for below says when the prompt is longer than the model's context.
    prompt.ids = eng::synthetic_prompt_ids(
        parse_int_strict(*f.prompt_tokens, "--prompt-tokens", 1, 1 << 24), cfg.vocab);
  } else {
    prompt = eng::resolve_prompt(f.model, f.prompt, f.prompt_ids);
  }
  const int64_t context = eng::context_for(cfg, int64_t(prompt.ids.size()), std::max(n, warmup));
  std::vector<Arm> arms;
  for (const auto& a : arm_names) {
    Arm arm;
    arm.name = a;
    arm.settings = eng::engine_options(a, f.max_dff, context, f.backends).fused;
    arms.push_back(std::move(arm));
  }
  eng::EngineOptions opt =
      eng::engine_options(arm_names[0], f.max_dff, context, f.backends);
  if (ep) ep->apply(opt);
  const LoadProgress load("bench-decode", f.model);
  auto engine = eng::Engine::open(f.model, opt);
  load.done();
  if (ep) ep->quiet_other_ranks();
  for (Arm& a : arms) {
    engine->set_fused_settings(a.settings);
    if (warmup > 0) {
      std::fprintf(stderr, "bench-decode: arm %s warm-up (%lld tokens)\n", a.name.c_str(),
                   (long long)warmup);
      run_pass(*engine, prompt.ids, warmup, collective);  // not reported
    }
    // Read after the warm-up: an untuned auto arm measures both paths there, and its measured
    // passes then run under the decision that measurement made (a measurement still
    // narrowing its band ends with the warm-up, so no measured pass runs its schedule).
    engine->conclude_policy_measurement();
    const auto d = engine->decode_decisions();
    a.decision = d.empty() ? "no MoE layers" : d.front().routed.explanation();
  }
  engine->set_profiling(true);  // two clock reads per op group: ~0.02% of a step
  for (int r = 0; r < repeats; ++r)
    for (Arm& a : arms) {
      engine->set_fused_settings(a.settings);
      engine->reset_profile();
      Pass p = run_pass(*engine, prompt.ids, n, collective);
      std::fprintf(stderr, "bench-decode: arm %s pass %d/%d: %lld tokens, %.2f tokens/s\n",
                   a.name.c_str(), r + 1, repeats, (long long)n, p.decode_tps());
      a.profile.add(engine->profile());
      a.prefill_profile.add(engine->prefill_profile());
      p.repeat = r + 1;
      a.counts.fused += p.decode_counts.fused;
      a.counts.fallback += p.decode_counts.fallback;
      for (const auto& [k, v] : p.decode_counts.reasons) a.counts.reasons[k] += v;
      a.passes.push_back(std::move(p));
    }

  // Model and host facts.
  const kernels::MoeExpertsView* ex = engine->first_moe_experts();
  const int64_t active = engine->active_weight_bytes_per_token();
  const int64_t peak = peak_rss_bytes();
  const double resident = engine->resident_at_open(), pmd = engine->weights_pmd_mapped_fraction();
  const std::string date = utc_date_time();
  double ratio = 0;
  if (arms.size() == 2) ratio = harness::median(arms[1].tps()) / harness::median(arms[0].tps());
  // With both arms: what the auto policy (flags, environment, calibration, default; no
  // measurement) picks for the first MoE layer, and whether that is the faster arm here.
  std::string auto_pick, auto_note;
  if (arms.size() == 2 && ex) {
    engine->set_fused_settings(
        eng::engine_options("auto", f.max_dff, context, f.backends).fused);
    const eng::Engine::LayerDecision d = engine->decode_decisions().at(0);
    auto_pick = d.routed.path == moe::Path::kFused ? "on" : "off";
    const std::string faster = ratio >= 1 ? "on" : "off";
    // The rule moex tune judges with (moe::within_noise), on the arms' interleaved passes:
    // seconds per token of the fused (on) and fallback (off) pass of each repeat as pairs.
    auto seconds_per_token = [](const std::vector<double>& tps) {
      std::vector<double> s;
      for (double t : tps) s.push_back(t > 0 ? 1.0 / t : 0.0);
      return s;
    };
    const size_t on = arms[0].name == "on" ? 0 : 1;
    moe::TunePoint judged;
    judged.point.ratio = ratio;
    judged.fused_spread = harness::relative_spread(arms[on].tps());  // with fewer than 3 repeats
    judged.fallback_spread = harness::relative_spread(arms[1 - on].tps());
    judged.paired =
        moe::paired_ratio(seconds_per_token(arms[on].tps()), seconds_per_token(arms[1 - on].tps()));
    const double band = judged.paired.pairs >= moe::kMinTiePairs
                            ? judged.paired.band
                            : std::max(judged.fused_spread, judged.fallback_spread);
    const bool tie = moe::within_noise(judged);
    auto_note = str_cat("the auto policy picks the ", auto_pick == "on" ? "fused" : "fallback",
                        " path (", d.routed.explanation(), "); the faster arm in this run was ",
                        faster, " (ratio ", ratio, ", tie band +-", 100 * band, "% over ",
                        judged.paired.pairs, " paired passes): ",
                        tie ? "a tie within that band, so either pick is as fast"
                            : str_cat("the policy's pick was the ",
                                      auto_pick == faster ? "faster" : "slower", " one"));
  }
  const std::optional<ExpertParallelReport> ep_report =
      ep ? std::optional(expert_parallel_report(*ep, *engine, arms)) : std::nullopt;
  std::vector<std::string> measure_notes;
  measure_notes.push_back("policy at load: " + engine->policy_measurement_plan());
  for (const std::string& line : engine->policy_measurement_report())
    measure_notes.push_back("policy measured on this host during warm-up: " + line);

  if (fmt == ReportFormat::kJson) {
    json j;
    j["model"] = {{"dir", f.model}, {"family", cfg.family}, {"dff", ex ? ex->dff() : 0},
                  {"hidden", cfg.hidden}, {"experts", cfg.moe.num_experts},
                  {"top_k", cfg.moe.top_k}, {"bits", ex ? ex->up.bits : 0},
                  {"group_size", ex ? ex->up.group_size : 0}, {"layers", cfg.num_layers},
                  {"moe_layers", cfg.num_moe_layers()},
                  {"active_weight_bytes_per_token", active},
                  // Read per decode step per token of context, for each element type of the
                  // cache (this run's is host.kv_cache): peers/compare.py adds it to the
                  // weights at a given depth, for each engine's cache type.
                  {"kv_cache_bytes_per_token",
                   {{"f32", model::kv_cache_bytes_per_token(cfg, DType::F32)},
                    {"f16", model::kv_cache_bytes_per_token(cfg, DType::F16)}}}};
    j["host"] = {{"backend", moe::backend_name(opt.backend)},
                 {"model_backend", opt.model_backend ? opt.model_backend->name() : "cpu"},
                 {"isa", isa_name(active_isa())},
                 {"precision", kernels::active_precision_label()}, {"threads", num_threads()},
                 {"kv_cache", backend::kv_cache_type_name(backend::kv_cache_type())},
                 {"cpu_model", cpu_model_name()},
                 {"moex_commit", moex_commit()}, {"date", date},
                 {"default_cap", moe::backend_default_max_dff(opt.backend)},
                 // Where the MoE layers' experts ran (--n-cpu-moe, --experts-on auto).
                 {"experts_host_layers", engine->experts_placement().host_layers},
                 {"experts_device_layers", engine->experts_placement().device_layers}};
    j["settings"] = {{"prompt", prompt.from_text ? f.prompt : ""}, {"prompt_tokens", prompt.ids.size()},
                     {"n", n}, {"warmup_tokens", warmup}, {"repeats", repeats}, {"fused", fused},
                     {"eos_ignored", true}};
    j["arms"] = json::array();
    for (const Arm& a : arms) {
      json runs = json::array();
      for (const Pass& p : a.passes) {
        json r = {{"repeat", p.repeat}, {"prompt_tokens", p.prompt_tokens},
                  {"prefill_s", p.prefill_s}, {"prefill_tps", p.prefill_tps()},
                  {"generated_tokens", p.generated}, {"decode_s", p.decode_s},
                  {"decode_tps", p.decode_tps()},
                  {"decode_gbps", p.decode_tps() * double(active) / 1e9}};
        r.update(p.decode_counts.to_json());
        r["prefill_path_counters"] = p.prefill_counts.to_json();
        runs.push_back(r);
      }
      const auto t = a.tps();
      json prof = json::array(), prefill_prof = json::array();
      for (const ProfileRow& pr : profile_rows(a.profile, engine->decode_op_weight_bytes()))
        prof.push_back({{"op", pr.op}, {"ms_per_token", pr.ms_per_token}, {"share", pr.share},
                        {"weight_mb_per_token", pr.mb_per_token}, {"gbps", pr.gbps}});
      for (const ProfileRow& pr : profile_rows(a.prefill_profile, {}))
        prefill_prof.push_back(
            {{"op", pr.op}, {"ms_per_token", pr.ms_per_token}, {"share", pr.share}});
      j["arms"].push_back({{"arm", a.name}, {"decision", a.decision}, {"runs", runs},
                           {"median_decode_tps", stat(t, 0)}, {"min_decode_tps", stat(t, 1)},
                           {"max_decode_tps", stat(t, 2)}, {"path_counters", a.counts.to_json()},
                           {"profile", prof}, {"prefill_profile", prefill_prof}});
    }
    if (arms.size() == 2) j["fused_over_fallback"] = ratio;
    if (!auto_pick.empty()) j["auto_policy"] = {{"arm", auto_pick}, {"note", auto_note}};
    if (!measure_notes.empty()) j["policy_measurement"] = measure_notes;
    if (ep_report) j["expert_parallel"] = ep_report->data;
    j["peak_rss_bytes"] = peak;
    j["weights_resident_at_open"] = resident;
    j["weights_pmd_mapped_fraction"] = pmd;
    std::cout << j.dump(1) << "\n";
    return 0;
  }

  Report rep;
  rep.title = "moex bench-decode";
  rep.header = {{"model", text_cell(f.model)},
                {"family", text_cell(cfg.family)},
                {"dff", integer_cell(ex ? ex->dff() : 0)},
                {"hidden", integer_cell(cfg.hidden)},
                {"experts", integer_cell(cfg.moe.num_experts)},
                {"top_k", integer_cell(cfg.moe.top_k)},
                {"bits", integer_cell(ex ? ex->up.bits : 0)},
                {"group_size", integer_cell(ex ? ex->up.group_size : 0)},
                {"active_weight_mb_per_token", number_cell(double(active) / 1e6, 2)},
                {"n", integer_cell(n)},
                {"warmup_tokens", integer_cell(warmup)},
                {"moex_commit", text_cell(moex_commit())},
                {"cpu_model", text_cell(cpu_model_name())},
                {"threads", integer_cell(num_threads())},
                {"isa", text_cell(isa_name(active_isa()))},
                {"precision", text_cell(kernels::active_precision_label())},
                {"kv_cache", text_cell(backend::kv_cache_type_name(backend::kv_cache_type()))},
                {"backend", text_cell(moe::backend_name(opt.backend))},
                {"default_cap", integer_cell(moe::backend_default_max_dff(opt.backend))},
                {"date", text_cell(date)},
                {"peak_rss_mib", number_cell(double(peak) / double(1 << 20), 1)},
                {"weights_resident_at_open", number_cell(resident, 3)},
                {"weights_pmd_mapped_fraction", number_cell(pmd, 3)}};
  rep.columns = {"arm", "repeat", "prompt_tokens", "prefill_s", "prefill_tps", "generated_tokens",
                 "decode_s", "decode_tps", "decode_gbps", "fused_calls", "fallback_calls",
                 "fallback_reasons", "median_decode_tps", "min_decode_tps", "max_decode_tps",
                 "fused_over_fallback"};
  for (int r = 0; r < repeats; ++r)
    for (const Arm& a : arms) {
      const Pass& p = a.passes[size_t(r)];
      const auto t = a.tps();
      rep.rows.push_back({text_cell(a.name), integer_cell(p.repeat), integer_cell(p.prompt_tokens),
                          number_cell(p.prefill_s, 4), number_cell(p.prefill_tps(), 2),
                          integer_cell(p.generated), number_cell(p.decode_s, 4),
                          number_cell(p.decode_tps(), 3),
                          number_cell(p.decode_tps() * double(active) / 1e9, 3),
                          integer_cell(p.decode_counts.fused), integer_cell(p.decode_counts.fallback),
                          text_cell(p.decode_counts.reasons_text()), number_cell(stat(t, 0), 3),
                          number_cell(stat(t, 1), 3), number_cell(stat(t, 2), 3),
                          arms.size() == 2 ? number_cell(ratio, 4) : text_cell("")});
    }
  if (fmt == ReportFormat::kMarkdown) {
    for (const Arm& a : arms) {
      const auto t = a.tps();
      rep.notes.push_back(str_cat(
          "arm ", a.name, ": decode ", n, " tokens/pass (EOS ignored), median ", stat(t, 0),
          " tok/s (min ", stat(t, 1), ", max ", stat(t, 2), ", ", repeats,
          " passes); path counters of the measured decode steps: fused ", a.counts.fused,
          ", fallback ", a.counts.fallback,
          a.counts.reasons.empty() ? "" : " (" + a.counts.reasons_text() + ")",
          "; decision: ", a.decision));
      std::string prof;
      for (const ProfileRow& pr : profile_rows(a.profile, engine->decode_op_weight_bytes())) {
        prof += str_cat(prof.empty() ? "" : "; ", pr.op, " ", number_cell(pr.ms_per_token, 2).text,
                        " ms (", number_cell(100 * pr.share, 1).text, "%)");
        if (pr.mb_per_token > 0)
          prof += str_cat(" ", number_cell(pr.mb_per_token, 1).text, " MB ",
                          number_cell(pr.gbps, 1).text, " GB/s");
      }
      if (!prof.empty())
        rep.notes.push_back(str_cat("arm ", a.name, " decode profile per token: ", prof));
      // The prefill's weights are read once per chunk, not per token: time shares only.
      std::string prefill_prof;
      for (const ProfileRow& pr : profile_rows(a.prefill_profile, {}))
        prefill_prof += str_cat(prefill_prof.empty() ? "" : "; ", pr.op, " ",
                                number_cell(pr.ms_per_token, 3).text, " ms (",
                                number_cell(100 * pr.share, 1).text, "%)");
      if (!prefill_prof.empty())
        rep.notes.push_back(
            str_cat("arm ", a.name, " prefill profile per prompt token: ", prefill_prof));
      if ((a.name == "on" && a.counts.fallback > 0) || (a.name == "off" && a.counts.fused > 0))
        rep.notes.push_back(str_cat("WARNING: arm ", a.name,
                                    " did not run only the path it names; see its counters"));
    }
    if (arms.size() == 2)
      rep.notes.push_back(str_cat("fused/fallback decode ratio (medians): ", ratio));
    if (!auto_note.empty()) rep.notes.push_back(auto_note);
    for (const std::string& m : measure_notes) rep.notes.push_back(m);
    if (ep_report)
      for (const std::string& line : ep_report->lines) rep.notes.push_back(line);
    rep.notes.push_back(str_cat("peak resident memory: ", eng::format_bytes(peak)));
  }
  std::cout << render_report(rep, fmt);
  return 0;
}

CommandSetup bench_decode_setup = [](CLI::App& sub) -> std::function<int()> {
  auto f = std::make_shared<BenchFlags>();
  sub.add_option("-m,--model", f->model, "model directory")->type_name("DIR")->required();
  sub.add_option("-p,--prompt", f->prompt, "prompt text")->capture_default_str();
  sub.add_option("--prompt-ids", f->prompt_ids, "prompt as token ids, e.g. 1,2,3 (wins over -p)")
      ->type_name("IDS");
  sub.add_option("--prompt-tokens", f->prompt_tokens,
                 "prompt of N synthetic token ids (fixed seed), for prefill tokens/s as "
                 "llama-bench's pp N")
      ->type_name("N");
  sub.add_option("-n", f->n, "decode steps per measured pass, exactly (default 100)")
      ->type_name("INT");
  sub.add_option("--warmup-tokens", f->warmup, "decode steps of the warm-up pass (default 20)")
      ->type_name("INT");
  sub.add_option("--repeats", f->repeats, "measured passes per arm (default 3)")->type_name("INT");
  sub.add_option("--fused", f->fused,
                 "auto, on, off, or both (interleaved off/on arms; default auto)");
  sub.add_option("--max-dff", f->max_dff, "Dff cap of the fused path in auto mode")
      ->type_name("INT");
  add_cpu_run_options(sub, &f->threads, &f->precision, &f->weights, &f->isa, &f->kv_cache);
  add_backend_options(sub, &f->backends);
  sub.add_option("-o,--output", f->output, "md, csv or json (json: for `moex sweep`)")
      ->capture_default_str();
  add_expert_parallel_flags(sub, &f->expert_parallel);
  return [f] { return run_bench(*f); };
};

MOEX_REGISTER_COMMAND(bench_decode, "bench-decode", "measure greedy decode throughput",
                      bench_decode_setup);

}  // namespace
}  // namespace moex::tools
