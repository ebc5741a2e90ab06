// `moex perplexity`: how well a model predicts a text, as llama-perplexity measures it
// (non-overlapping windows of --ctx tokens, the second half of each scored), and with
// --kl-divergence how far its predictions move from a base run's saved logits (KL divergence,
// same top token, delta p). With --fused on|off|both the scored half runs as single-token
// decode steps through that MoE path; otherwise every window is one batched pass.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/file_read.h"
#include "core/isa.h"
#include "core/parallel.h"
#include "core/strict_parse.h"
#include "core/sysinfo.h"
#include "eval/logits_file.h"
#include "eval/perplexity_stats.h"
#include "eval/token_scores.h"
#include "eval/windows.h"
#include "kernels/precision.h"
#include "model/engine/engine.h"
#include "model/engine/run_setup.h"
#include "model/gguf/gguf_model.h"
#include "tokenizer/tokenizer.h"
#include "tools/command.h"
#include "tools/util_flags.h"
#include "tools/util_perplexity_report.h"
#include "tools/util_progress.h"

namespace moex::tools {
namespace {

namespace eng = moex::model::engine;

// The largest text file read whole (a few MB is a usual evaluation text).
constexpr int64_t kMaxTextBytes = int64_t{1} << 30;

struct PerplexityFlags {
  std::string model;
  std::optional<std::string> file, token_ids, ctx, chunks, batch, save_logits, kl_base, fused, max_dff,
      threads, precision, weights, kv_cache, isa, output;
};

// What the scored half of each window runs through.
struct ScorePath {
  std::string name;
  std::optional<moe::FusedMode> decode_fused;  // nullopt: one batched pass per window
};

std::vector<ScorePath> score_paths(const std::optional<std::string>& fused) {
  if (!fused || *fused == "auto") return {{"batch", std::nullopt}};
  if (*fused == "on") return {{"decode fused on", moe::FusedMode::kOn}};
  if (*fused == "off") return {{"decode fused off", moe::FusedMode::kOff}};
  if (*fused == "both")
    return {{"decode fused on", moe::FusedMode::kOn}, {"decode fused off", moe::FusedMode::kOff}};
  fail("--fused ", *fused, ": expected auto (batched scoring), on, off or both (decode steps)");
}

int run_perplexity(const PerplexityFlags& f) {
  if (f.threads) parse_threads_flag(*f.threads);
  eng::apply_cpu_settings(f.threads, lowercase_opt(f.isa), lowercase_opt(f.precision),
                          lowercase_opt(f.weights),
                          lowercase_opt(f.kv_cache));
  const std::string out_format = f.output ? lowercase(*f.output) : "text";
  if (out_format != "text" && out_format != "json")
    fail("-o ", *f.output, ": expected text or json");
  const std::vector<ScorePath> paths = score_paths(lowercase_opt(f.fused));
  if (f.save_logits && paths.size() > 1)
    fail("--save-logits saves one run's logits: give --fused auto, on or off, not both");
  if (f.save_logits && f.kl_base) fail("--save-logits and --kl-divergence: give one of them");

  std::unique_ptr<eval::LogitsFileReader> base;
  eval::WindowPlan plan;
  std::vector<int32_t> tokens;
  bool add_bos = false;
  std::optional<Tokenizer> tok;
  if (!f.file && !f.kl_base && !f.token_ids)
    fail("perplexity needs the text: -f FILE (or --token-ids FILE)");
  if (f.file && f.token_ids) fail("-f and --token-ids: give one of them");
  if (f.token_ids) {
    // Comma-separated ids, as --prompt-ids takes them (line breaks and spaces allowed).
    std::string text = read_small_file(*f.token_ids, kMaxTextBytes, "token ids file");
    std::string ids;
    for (char ch : text)
      if (ch != '\n' && ch != ' ' && ch != '\r' && ch != '\t') ids += ch;
    while (!ids.empty() && ids.back() == ',') ids.pop_back();
    tokens = eng::parse_prompt_ids(ids, "--token-ids " + *f.token_ids);
  }
  if (f.file) {
    // When the tokenizer's post-processor starts a text with BOS, each window starts with it
    // (llama-perplexity does the same).
    tok = model::load_model_tokenizer(f.model);
    tokens = tok->encode(read_small_file(*f.file, kMaxTextBytes, "text file"), false);
    const std::vector<int32_t> specials = tok->encode("", true);
    add_bos = specials.size() == 1 && tok->bos_id() && specials[0] == *tok->bos_id();
  }
  // The first token of every window becomes BOS when the tokenizer starts texts with it.
  auto start_windows_with_bos = [&](std::vector<int32_t>& ids) {
    if (add_bos)
      for (int64_t c = 0; c < plan.chunks; ++c) ids[size_t(c * plan.ctx)] = *tok->bos_id();
  };
  if (f.kl_base) {
    base = std::make_unique<eval::LogitsFileReader>(*f.kl_base);
    const eval::LogitsFileHeader& h = base->header();
    if (f.ctx || f.chunks)
      fail("--kl-divergence: the windows come from the base run's file (", *f.kl_base,
           ": ctx ", h.ctx, ", ", h.chunks, " chunks); leave out --ctx and --chunks");
    plan = {.ctx = h.ctx, .chunks = h.chunks, .first = h.first};
    if (f.token_ids) fail("--kl-divergence takes its tokens from ", *f.kl_base, "; leave out --token-ids");
    if (f.file) {
      std::vector<int32_t> mine = tokens;
      if (int64_t(mine.size()) < plan.chunks * plan.ctx)
        fail("--kl-divergence: ", *f.file, " has ", mine.size(), " tokens, the base run "
             "scored ", plan.chunks * plan.ctx);
      mine.resize(size_t(plan.chunks * plan.ctx));
      start_windows_with_bos(mine);
      if (mine != base->tokens())
        fail("--kl-divergence: ", *f.file, " does not tokenize to the base run's tokens ",
             "(another text or tokenizer); leave out -f to use the file's tokens");
    }
    tokens = base->tokens();
  } else {
    const int64_t ctx = f.ctx ? parse_int_strict(*f.ctx, "--ctx", 4, eval::kMaxLogitsCtx) : 512;
    const int64_t chunks =
        f.chunks ? parse_int_strict(*f.chunks, "--chunks", 1, eval::kMaxLogitsChunks) : 0;
    plan = eval::plan_windows(int64_t(tokens.size()), ctx, chunks);
    tokens.resize(size_t(plan.chunks * plan.ctx));
    start_windows_with_bos(tokens);
  }

  const LoadProgress load("perplexity", f.model);
  eng::EngineOptions options = eng::engine_options(std::nullopt, f.max_dff, plan.ctx);
  options.measure_policy = false;  // scoring is not the place to time the paths
  if (f.batch)
    options.prefill_chunk = parse_int_strict(*f.batch, "--batch", 1, eng::kMaxPrefillChunk);
  auto engine = eng::Engine::open(f.model, options);
  load.done();
  const int64_t V = engine->vocab();
  if (base && base->header().vocab != V)
    fail("--kl-divergence: ", *f.kl_base, " holds logits over ", base->header().vocab,
         " tokens, ", f.model, " has a vocabulary of ", V);
  for (int32_t t : tokens)
    if (t < 0 || t >= V)
      fail("token ", t, " is outside the model's vocabulary of ", V, " (", f.model, ")");

  std::unique_ptr<eval::LogitsFileWriter> saver;
  if (f.save_logits)
    saver = std::make_unique<eval::LogitsFileWriter>(
        *f.save_logits,
        eval::LogitsFileHeader{.vocab = V, .ctx = plan.ctx, .chunks = plan.chunks,
                               .first = plan.first},
        tokens);

  std::fprintf(stderr,
               "perplexity: %s, %lld windows of %lld tokens (%lld scored each), precision %s, "
               "isa %s, %d threads\n",
               f.model.c_str(), (long long)plan.chunks, (long long)plan.ctx,
               (long long)plan.scored_per_chunk(), kernels::active_precision_label(),
               isa_name(active_isa()), num_threads());
  nlohmann::ordered_json report = {{"model", f.model},
                                   {"text", f.file ? *f.file : f.token_ids ? *f.token_ids : std::string()},
                                   {"kl_base", f.kl_base ? *f.kl_base : std::string()},
                                   {"ctx", plan.ctx},
                                   {"chunks", plan.chunks},
                                   {"first_scored", plan.first},
                                   {"precision", kernels::active_precision_label()},
                                   {"isa", isa_name(active_isa())},
                                   {"threads", num_threads()},
                                   {"runs", nlohmann::ordered_json::array()}};
  std::vector<double> logp(static_cast<size_t>(V)), base_logp(static_cast<size_t>(V));
  std::vector<float> base_row(static_cast<size_t>(V));
  for (size_t p = 0; p < paths.size(); ++p) {
    const ScorePath& path = paths[p];
    if (path.decode_fused)
      engine->set_fused_settings(
          {.mode = *path.decode_fused, .mode_source = moe::SettingSource::kFlag, .max_dff = {}});
    engine->set_routing_tally(true);
    engine->counters().reset();
    if (p > 0 && base) base = std::make_unique<eval::LogitsFileReader>(*f.kl_base);
    eval::NllAccumulator nll;
    eval::KlAccumulator kl;
    const double t0 = now_seconds();
    for (int64_t c = 0; c < plan.chunks; ++c) {
      const int32_t* w = tokens.data() + c * plan.ctx;
      engine->reset();
      engine->forward(w, plan.first);
      // Batched scoring runs the scored half in pieces of at most one prefill chunk, so the
      // logits held at once stay at chunk x vocab floats however long the window.
      const float* rows = nullptr;
      int64_t rows_begin = 0, rows_end = 0;
      for (int64_t j = plan.first; j < plan.ctx - 1; ++j) {
        // Row j (the logits after token j) predicts token j + 1.
        const float* row = nullptr;
        if (path.decode_fused) {
          row = engine->decode(w[j]);
        } else {
          if (j >= rows_end) {
            rows_begin = j;
            rows_end = std::min(plan.ctx - 1, j + engine->prefill_chunk());
            rows = engine->forward_every_row(engine->sequence(), w + j, rows_end - j);
          }
          row = rows + (j - rows_begin) * V;
        }
        const std::string where = str_cat("chunk ", c, " position ", j);
        const eval::RowScore s = eval::score_row(row, V, w[j + 1], logp.data(), where.c_str());
        nll.add(s.nll);
        if (saver) saver->write_row(row);
        if (base) {
          base->read_row(base_row.data());
          const eval::RowScore b =
              eval::score_row(base_row.data(), V, w[j + 1], base_logp.data(), where.c_str());
          kl.add(s, b, eval::kl_divergence(base_logp.data(), logp.data(), V));
        }
      }
      const double el = now_seconds() - t0;
      const eval::Perplexity sofar = nll.result();
      std::fprintf(stderr, "perplexity: %s chunk %lld/%lld PPL %.4f, %.1f s, ETA %.0f s\n",
                   path.name.c_str(), (long long)(c + 1), (long long)plan.chunks, sofar.ppl, el,
                   el / double(c + 1) * double(plan.chunks - c - 1));
    }
    PerplexityRun run;
    run.path = path.name;
    run.ppl = nll.result();
    if (base) run.kl = kl.result();
    run.routing = engine->routing_tally();
    run.experts = engine->config().moe.num_experts;
    run.top_k = engine->config().moe.top_k;
    run.seconds = now_seconds() - t0;
    run.fused_calls = engine->counters().fused_calls();
    run.fallback_calls = engine->counters().fallback_calls();
    if (out_format == "text") std::cout << perplexity_text(run) << std::flush;
    report["runs"].push_back(perplexity_json(run));
  }
  if (saver) {
    saver->finish();
    std::fprintf(stderr, "perplexity: saved %lld logits rows to %s\n",
                 (long long)plan.scored(), f.save_logits->c_str());
  }
  if (out_format == "json") std::cout << report.dump(2) << std::endl;
  return 0;
}

CommandSetup perplexity_setup = [](CLI::App& sub) -> std::function<int()> {
  auto f = std::make_shared<PerplexityFlags>();
  sub.add_option("-m,--model", f->model, "model directory (config.json + safetensors)")
      ->type_name("DIR")
      ->required();
  sub.add_option("-f,--file", f->file, "the text to score (UTF-8), tokenized by DIR's tokenizer")
      ->type_name("FILE");
  sub.add_option("--token-ids", f->token_ids,
                 "score these token ids (comma-separated in FILE) instead of a text")
      ->type_name("FILE");
  sub.add_option("--ctx", f->ctx, "tokens per window, 4-16777216 (default 512); the second half "
                 "of each is scored")->type_name("INT");
  sub.add_option("--chunks", f->chunks, "most windows to score (default: all the text holds)")
      ->type_name("INT");
  sub.add_option("--batch", f->batch, "tokens per forward batch, 1-65536 (default 512)")
      ->type_name("INT");
  sub.add_option("--save-logits", f->save_logits,
                 "save the scored positions' logits (f32 rows, with the tokens) as the base of "
                 "a later --kl-divergence run (llama-perplexity's --kl-divergence-base)")
      ->type_name("FILE");
  sub.add_option("--kl-divergence", f->kl_base,
                 "compare with the base run saved in FILE: PPL ratio, KL divergence, same top "
                 "token, delta p (the windows and tokens come from FILE)")
      ->type_name("FILE");
  sub.add_option("--fused", f->fused,
                 "auto (default: each window one batched pass), or score by single-token decode "
                 "steps with the fused MoE path on, off, or both (two runs)");
  sub.add_option("--max-dff", f->max_dff, "Dff cap of the fused path in auto mode")
      ->type_name("INT");
  add_cpu_run_options(sub, &f->threads, &f->precision, &f->weights, &f->isa, &f->kv_cache);
  sub.add_option("-o,--output", f->output, "text (default) or json")->type_name("FORMAT");
  return [f] { return run_perplexity(*f); };
};

MOEX_REGISTER_COMMAND(perplexity, "perplexity",
                      "perplexity of a text, and KL divergence against a base run's logits",
                      perplexity_setup);

}  // namespace
}  // namespace moex::tools
