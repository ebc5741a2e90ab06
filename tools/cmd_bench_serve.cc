// `moex bench-serve`: aggregate decode throughput and per-request latency of the serving
// scheduler (src/serve/scheduler.h) at several numbers of concurrent streams, in one process
// and without HTTP: for each count c, c requests (distinct synthetic prompts, greedy, EOS
// ignored, exactly -n tokens each) go to a scheduler with c slots at once. Beside them, in the
// same run, the engine's plain single-sequence decode loop (what bench-decode times). Rounds
// interleave the stream counts, so slow drift of the host spreads over all of them.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

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
#include "serve/scheduler.h"
#include "tools/command.h"
#include "tools/util_flags.h"
#include "tools/util_progress.h"
#include "tools/util_report.h"
#include "tools/util_tune_report.h"

namespace moex::tools {
namespace {

namespace eng = moex::model::engine;
using nlohmann::json;

struct Flags {
  std::string model;
  std::optional<std::string> streams, prompt_tokens, n, repeats, fused, max_dff, threads, precision, weights,
      kv_cache,
      isa, batch_tokens;
  std::string output = "md";
};

// One measured run at `streams` concurrent requests.
struct Run {
  int64_t streams = 0, round = 0;
  int64_t generated = 0;
  double wall_s = 0;
  std::vector<double> ttft_s, itl_s;  // per request; per token after the first
  int64_t steps = 0, decoded_rows = 0, expert_bytes = 0;
  double tps() const { return double(generated) / std::max(wall_s, 1e-12); }
};

std::vector<int32_t> synthetic_prompt(int64_t n, int64_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> pick(0, vocab - 1);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (auto& id : ids) id = int32_t(pick(rng));
  return ids;
}

// Reads one stream to its finish, recording when its tokens arrived.
void consume(serve::RequestStream& s, double t0, std::vector<double>& ttft,
             std::vector<double>& itl, int64_t& tokens, std::string& error) {
  serve::RequestStream::Event ev;
  double last = -1;
  for (;;) {
    if (!s.next(ev, std::chrono::milliseconds(1000))) continue;
    const double t = now_seconds();
    if (!ev.tokens.empty()) {
      if (last < 0) {
        ttft.push_back(t - t0);
        for (size_t i = 1; i < ev.tokens.size(); ++i) itl.push_back(0.0);
      } else {
        // Tokens that arrived together share the gap evenly.
        const double gap = (t - last) / double(ev.tokens.size());
        for (size_t i = 0; i < ev.tokens.size(); ++i) itl.push_back(gap);
      }
      last = t;
      tokens += int64_t(ev.tokens.size());
    }
    if (ev.finish != serve::Finish::kNone) {
      if (ev.finish != serve::Finish::kLength) error = serve::finish_name(ev.finish) + (" " + ev.error);
      return;
    }
  }
}

Run run_streams(eng::Engine& e, int64_t streams, int64_t prompt_tokens, int64_t n,
                int64_t round, int64_t batch_tokens) {
  serve::SchedulerOptions o;
  o.parallel = int(streams);
  o.queue_limit = streams;
  o.batch_tokens = batch_tokens;
  serve::Scheduler sched(e, o);
  const auto c0 = e.counters().routed_expert_bytes_read();
  std::vector<std::shared_ptr<serve::RequestStream>> handles;
  Run r;
  r.streams = streams;
  r.round = round;
  const double t0 = now_seconds();
  for (int64_t i = 0; i < streams; ++i) {
    serve::GenerationRequest req;
    req.prompt = synthetic_prompt(prompt_tokens, e.vocab(), uint64_t(1000 * round + i + 1));
    req.params.max_tokens = n;
    auto sub = sched.submit(std::move(req));
    if (!sub.stream) fail("bench-serve: the scheduler refused a request: ", sub.refusal);
    handles.push_back(sub.stream);
  }
  const auto count = static_cast<size_t>(streams);
  std::vector<std::vector<double>> ttft(count), itl(count);
  std::vector<int64_t> got(count, 0);
  std::vector<std::string> errors(count);
  std::vector<std::thread> readers;
  for (int64_t i = 0; i < streams; ++i)
    readers.emplace_back([&, i] {
      consume(*handles[size_t(i)], t0, ttft[size_t(i)], itl[size_t(i)], got[size_t(i)],
              errors[size_t(i)]);
    });
  for (auto& t : readers) t.join();
  r.wall_s = now_seconds() - t0;
  for (int64_t i = 0; i < streams; ++i) {
    if (!errors[size_t(i)].empty() || got[size_t(i)] != n)
      fail("bench-serve: request ", i, " of ", streams, " ended with ", got[size_t(i)],
           " of ", n, " tokens (", errors[size_t(i)], ")");
    r.generated += got[size_t(i)];
    r.ttft_s.insert(r.ttft_s.end(), ttft[size_t(i)].begin(), ttft[size_t(i)].end());
    r.itl_s.insert(r.itl_s.end(), itl[size_t(i)].begin(), itl[size_t(i)].end());
  }
  const serve::SchedulerStats st = sched.stats();
  r.steps = st.steps;
  r.decoded_rows = st.decoded_rows;
  r.expert_bytes = e.counters().routed_expert_bytes_read() - c0;
  return r;
}

// The engine alone: prefill, then n greedy single-token decode steps on its own sequence.
double plain_decode_tps(eng::Engine& e, int64_t prompt_tokens, int64_t n, uint64_t seed) {
  e.reset();
  const float* l = e.prefill(synthetic_prompt(prompt_tokens, e.vocab(), seed));
  int32_t tok = int32_t(::moex::ops::argmax(l, e.vocab()));
  const double t0 = now_seconds();
  for (int64_t i = 0; i < n; ++i) tok = int32_t(::moex::ops::argmax(e.decode(tok), e.vocab()));
  return double(n) / std::max(now_seconds() - t0, 1e-12);
}

// The engine's batched step alone, without the scheduler or its threads: `streams`
// sequences prefilled, then n decode_batch steps over all of them (greedy).
double engine_batch_tps(eng::Engine& e, int64_t streams, int64_t prompt_tokens, int64_t n,
                        uint64_t seed, eng::DecodeProfile& profile) {
  std::vector<std::unique_ptr<eng::Sequence>> seqs;
  std::vector<eng::Sequence*> rows;
  std::vector<int32_t> tokens;
  for (int64_t i = 0; i < streams; ++i) {
    seqs.push_back(e.new_sequence());
    rows.push_back(seqs.back().get());
    const auto p = synthetic_prompt(prompt_tokens, e.vocab(), seed * 1000 + uint64_t(i));
    tokens.push_back(int32_t(::moex::ops::argmax(e.forward(*rows.back(), p.data(), int64_t(p.size())), e.vocab())));
  }
  e.reset_profile();
  e.set_profiling(true);  // two clock reads per op group and step
  const double t0 = now_seconds();
  for (int64_t step = 0; step < n; ++step) {
    const float* l = e.decode_batch(rows.data(), tokens.data(), streams);
    for (int64_t i = 0; i < streams; ++i)
      tokens[size_t(i)] = int32_t(::moex::ops::argmax(l + i * e.vocab(), e.vocab()));
  }
  const double took = now_seconds() - t0;
  e.set_profiling(false);
  profile.add(e.profile());
  return double(streams * n) / std::max(took, 1e-12);
}

double ms(double s) { return s * 1e3; }

int run(const Flags& f) {
  if (f.threads) parse_threads_flag(*f.threads);
  eng::apply_cpu_settings(f.threads, lowercase_opt(f.isa), lowercase_opt(f.precision),
                          lowercase_opt(f.weights),
                          lowercase_opt(f.kv_cache));
  const std::vector<int64_t> streams =
      parse_int_list(f.streams.value_or("1,2,4,8"), "--streams", 1, serve::kMaxParallel);
  const int64_t prompt_tokens =
      f.prompt_tokens ? parse_int_strict(*f.prompt_tokens, "--prompt-tokens", 1, 1 << 16) : 32;
  const int64_t n = f.n ? parse_int_strict(*f.n, "-n", 1, 1 << 20) : 64;
  const int64_t repeats = f.repeats ? parse_int_strict(*f.repeats, "--repeats", 1, 100) : 3;
  const int64_t batch_tokens =
      f.batch_tokens
          ? parse_int_strict(*f.batch_tokens, "--batch-tokens", 1, serve::kMaxBatchTokens)
          : 0;
  const ReportFormat fmt = parse_report_format(f.output, "-o");
  const model::ModelConfig cfg = model::load_model_config(f.model);
  const int64_t context = eng::context_for(cfg, prompt_tokens, n + 1);
  eng::EngineOptions opt = eng::engine_options(lowercase_opt(f.fused), f.max_dff, context);
  const LoadProgress load("bench-serve", f.model);
  auto engine = eng::Engine::open(f.model, opt);
  load.done();

  // Warm-up (not reported): the largest count and one plain pass; the policy's online
  // measurement, if it runs, finishes in the plain pass's single-token steps.
  std::fprintf(stderr, "bench-serve: warm-up\n");
  plain_decode_tps(*engine, prompt_tokens, std::min<int64_t>(n, 32), 7);
  run_streams(*engine, *std::max_element(streams.begin(), streams.end()), prompt_tokens,
              std::min<int64_t>(n, 16), 0, batch_tokens);

  std::vector<Run> runs;
  std::vector<double> plain;
  std::vector<std::vector<double>> batch_only(streams.size());
  std::vector<eng::DecodeProfile> batch_profile(streams.size());
  for (int64_t round = 1; round <= repeats; ++round) {
    plain.push_back(plain_decode_tps(*engine, prompt_tokens, n, uint64_t(round)));
    std::fprintf(stderr, "bench-serve: round %lld: engine alone %.2f tok/s\n", (long long)round,
                 plain.back());
    for (size_t ci = 0; ci < streams.size(); ++ci) {
      const int64_t c = streams[ci];
      batch_only[ci].push_back(
          engine_batch_tps(*engine, c, prompt_tokens, n, uint64_t(round), batch_profile[ci]));
      runs.push_back(run_streams(*engine, c, prompt_tokens, n, round, batch_tokens));
      std::fprintf(stderr, "bench-serve: round %lld: %lld streams %.2f tok/s aggregate\n",
                   (long long)round, (long long)c, runs.back().tps());
    }
  }

  // Per stream count: medians over rounds (and min/max of the aggregate).
  struct Summary {
    int64_t streams;
    std::vector<double> tps;
    std::vector<double> ttft, itl;
    double rows_per_step = 0, expert_mb_per_step = 0, expert_mb_per_token = 0;
  };
  std::vector<Summary> sums;
  for (int64_t c : streams) {
    Summary s{c, {}, {}, {}};
    int64_t steps = 0, rows = 0, bytes = 0, gen = 0;
    for (const Run& r : runs) {
      if (r.streams != c) continue;
      s.tps.push_back(r.tps());
      s.ttft.insert(s.ttft.end(), r.ttft_s.begin(), r.ttft_s.end());
      s.itl.insert(s.itl.end(), r.itl_s.begin(), r.itl_s.end());
      steps += r.steps, rows += r.decoded_rows, bytes += r.expert_bytes, gen += r.generated;
    }
    s.rows_per_step = steps ? double(rows) / double(steps) : 0;
    s.expert_mb_per_step = steps ? double(bytes) / double(steps) / 1e6 : 0;
    s.expert_mb_per_token = gen ? double(bytes) / double(gen) / 1e6 : 0;
    sums.push_back(std::move(s));
  }
  const double base = harness::median(sums.front().tps);
  const double plain_med = harness::median(plain);

  Report rep;
  rep.title = "moex bench-serve";
  rep.header = {{"model", text_cell(f.model)},
                {"family", text_cell(cfg.family)},
                {"layers", integer_cell(cfg.num_layers)},
                {"experts", integer_cell(cfg.moe.num_experts)},
                {"top_k", integer_cell(cfg.moe.top_k)},
                {"prompt_tokens", integer_cell(prompt_tokens)},
                {"n", integer_cell(n)},
                {"repeats", integer_cell(repeats)},
                {"batch_tokens",
                 integer_cell(batch_tokens ? batch_tokens
                                           : serve::default_batch_tokens(num_threads()))},
                {"engine_alone_median_tps", number_cell(plain_med, 3)},
                {"engine_alone_min_tps", number_cell(*std::min_element(plain.begin(), plain.end()), 3)},
                {"engine_alone_max_tps", number_cell(*std::max_element(plain.begin(), plain.end()), 3)},
                {"moex_commit", text_cell(moex_commit())},
                {"cpu_model", text_cell(cpu_model_name())},
                {"threads", integer_cell(num_threads())},
                {"isa", text_cell(isa_name(active_isa()))},
                {"precision", text_cell(kernels::active_precision_label())},
                {"kv_cache", text_cell(backend::kv_cache_type_name(backend::kv_cache_type()))},
                {"date", text_cell(utc_date_time())},
                {"peak_rss_mib", number_cell(double(peak_rss_bytes()) / double(1 << 20), 1)}};
  rep.columns = {"streams", "median_tps", "min_tps", "max_tps", "over_1_stream",
                 "over_engine_alone", "engine_batch_tps", "ttft_p50_ms", "ttft_max_ms", "itl_p50_ms", "itl_p99_ms",
                 "rows_per_step", "expert_mb_per_step", "expert_mb_per_token"};
  for (size_t ci = 0; ci < sums.size(); ++ci) {
    const Summary& s = sums[ci];
    const double med = harness::median(s.tps);
    rep.rows.push_back(
        {integer_cell(s.streams), number_cell(med, 3),
         number_cell(*std::min_element(s.tps.begin(), s.tps.end()), 3),
         number_cell(*std::max_element(s.tps.begin(), s.tps.end()), 3),
         number_cell(med / base, 3), number_cell(med / plain_med, 3),
         number_cell(harness::median(batch_only[ci]), 3),
         number_cell(ms(harness::median(s.ttft)), 2),
         number_cell(ms(*std::max_element(s.ttft.begin(), s.ttft.end())), 2),
         number_cell(ms(harness::percentile(s.itl, 0.5)), 2),
         number_cell(ms(harness::percentile(s.itl, 0.99)), 2), number_cell(s.rows_per_step, 2),
         number_cell(s.expert_mb_per_step, 2), number_cell(s.expert_mb_per_token, 3)});
  }
  rep.notes.push_back(str_cat(
      "tps: generated tokens of all streams / wall time from the first submit to the last "
      "finish (prefill included), median over ", repeats, " rounds; over_1_stream: against the "
      "first --streams entry in the same run; engine alone: the plain single-sequence decode "
      "loop (bench-decode's), same rounds; engine_batch_tps: decode_batch over all streams "
      "alone (no scheduler, no prefill), median"));
  rep.notes.push_back(
      "expert_mb: routed expert weights the MoE layers selected (distinct experts per layer "
      "call, each read once), per decode step and per generated token");
  // Where a batched step's time goes, per stream count (decode_batch alone).
  for (size_t ci = 0; ci < streams.size(); ++ci) {
    const eng::DecodeProfile& p = batch_profile[ci];
    if (p.steps == 0) continue;
    std::string line = str_cat("decode_batch of ", streams[ci], " rows, ms per step:");
    for (int op = 0; op < eng::kNumDecodeOps; ++op)
      if (p.seconds[size_t(op)] > 0)
        line += str_cat(" ", eng::decode_op_name(eng::DecodeOp(op)), " ",
                        number_cell(1e3 * p.seconds[size_t(op)] / double(p.steps), 2).text);
    rep.notes.push_back(line);
  }
  std::cout << render_report(rep, fmt);
  return 0;
}

std::function<int()> setup_bench_serve(CLI::App& sub) {
  auto f = std::make_shared<Flags>();
  sub.add_option("-m,--model", f->model, "model directory")->required();
  sub.add_option("--streams", f->streams, "concurrent streams, a list (default 1,2,4,8)");
  sub.add_option("--prompt-tokens", f->prompt_tokens, "prompt length per request (default 32)");
  sub.add_option("-n", f->n, "tokens generated per request, EOS ignored (default 64)");
  sub.add_option("--repeats", f->repeats, "rounds over all stream counts (default 3)");
  sub.add_option("--batch-tokens", f->batch_tokens,
                 "the scheduler's prompt tokens per step, as moex serve's (default: 32 per "
                 "thread, 64 to 2048)");
  sub.add_option("--fused", f->fused, "auto|on|off");
  sub.add_option("--max-dff", f->max_dff, "fused-path Dff cap");
  sub.add_option("--threads", f->threads, "worker threads");
  sub.add_option("--precision", f->precision, kPrecisionHelp)->type_name("TIER");
  sub.add_option("--weights", f->weights, kWeightsHelp)->type_name("map|copy");
  sub.add_option("--kv-cache", f->kv_cache, kKvCacheHelp)->type_name("f32|f16");
  sub.add_option("--isa", f->isa, "scalar|avx2|avx512");
  sub.add_option("-o", f->output, "md|csv|json (default md)");
  return [f] { return run(*f); };
}

}  // namespace

MOEX_REGISTER_COMMAND(bench_serve, "bench-serve",
                      "aggregate tokens/s and latency of the serving scheduler at 1..N streams",
                      setup_bench_serve);

}  // namespace moex::tools
