// `moex generate`: runs a model on a prompt (text through the model's tokenizer, with --chat
// as one user turn of its chat template, or token ids) and streams the sampled continuation,
// up to -n tokens, EOS or the model's context limit; prints prompt and decode speed, peak
// memory and, with -v, each MoE layer's dispatch decision and the path counters.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/atomic_write.h"
#include "core/error.h"
#include "core/isa.h"
#include "core/parallel.h"
#include "core/strict_parse.h"
#include "core/sysinfo.h"
#include "io/safetensors.h"
#include "kernels/precision.h"
#include "model/engine/engine.h"
#include "model/engine/run_setup.h"
#include "model/gguf/gguf_model.h"
#include "model/family_registry.h"
#include "model/generation_config.h"
#include "generate/engine_verifier.h"
#include "generate/generator.h"
#include "generate/mtp_draft.h"
#include "generate/speculative.h"
#include "serve/chat_prompt.h"
#include "tokenizer/tokenizer.h"
#include "tools/command.h"
#include "tools/util_expert_parallel.h"
#include "tools/util_flags.h"
#include "tools/util_progress.h"
#include "tools/util_sampling.h"
#include "tools/util_spec.h"

namespace moex::tools {
namespace {

namespace eng = moex::model::engine;
using serve::ChatPrompt;
using serve::chat_message;

struct GenerateFlags {
  std::string model;
  std::optional<std::string> prompt, prompt_ids, system, n, fused, max_dff, threads, precision, weights,
      kv_cache, isa,
      dump_logits, dump_draft_logits, prefill_chunk;
  eng::BackendFlags backends;  // --backend, --experts-on, --n-cpu-moe
  SamplingFlags sampling;
  SpecFlags spec;
  ExpertParallelFlags expert_parallel;
  bool verbose = false, ignore_eos = false, chat = false;
};

// --chat: -p (and --system) as a conversation through DIR's chat template, as mlx_lm.generate
// does; the template's origin goes to *origin for -v.
eng::Prompt chat_prompt(const GenerateFlags& f, std::string* origin) {
  if (f.prompt_ids) fail("--chat renders -p text; it does not take --prompt-ids");
  if (!f.prompt) fail("--chat needs the user's message as -p TEXT");
  const ChatPrompt cp(f.model, model::load_model_tokenizer(f.model));
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (f.system) messages.push_back(chat_message("system", *f.system));
  messages.push_back(chat_message("user", *f.prompt));
  *origin = cp.origin();
  eng::Prompt p{cp.ids(messages), true};
  if (p.ids.empty()) fail(cp.origin(), ": the chat template rendered an empty prompt");
  return p;
}

int run_generate(GenerateFlags f) {
  if (f.threads) parse_threads_flag(*f.threads);  // the bound and message of every command
  const SpecSetup spec = spec_setup(f.spec);
  if (spec.on && f.expert_parallel.on)
    fail("--spec: speculative decoding does not run with --expert-parallel yet");
  ExpertParallelRun* ep = ExpertParallelRun::start(f.expert_parallel, f.model);
  if (ep && !ep->root()) f.dump_logits.reset();  // rank 0 writes it (every rank has the logits)
  eng::apply_cpu_settings(f.threads, lowercase_opt(f.isa), lowercase_opt(f.precision),
                          lowercase_opt(f.weights),
                          lowercase_opt(f.kv_cache));
  require_mapped_weights(ep);
  const int64_t n = f.n ? parse_int_strict(*f.n, "-n", 1, int64_t{1} << 30) : 128;
  if (f.system && !f.chat) fail("--system is a turn of the chat template: it needs --chat");
  const model::ModelConfig cfg = model::load_model_config(f.model);
  const model::GenerationConfig gen = model::load_generation_config(f.model, cfg.vocab);
  const SamplingSetup sampling = sampling_setup(f.sampling, gen);
  const std::string& sampling_note = sampling.defaults_note;
  note_random_seed("generate", sampling, sampling.args.temperature == 0.0, f.verbose);
  std::string template_origin;
  const eng::Prompt prompt = f.chat ? chat_prompt(f, &template_origin)
                                    : eng::resolve_prompt(f.model, f.prompt, f.prompt_ids);
  // The prompt must fit the context; the continuation stops at its limit (as llama.cpp and
  // mlx-lm do) instead of -n being refused up front.
  const int64_t prompt_tokens = int64_t(prompt.ids.size());
  eng::context_for(cfg, prompt_tokens, 0);  // throws when the prompt alone is too long
  const int64_t context =
      cfg.max_position > 0 ? std::min(prompt_tokens + n, cfg.max_position) : prompt_tokens + n;
  const LoadProgress load("generate", f.model);
  eng::EngineOptions options =
      eng::engine_options(f.fused, f.max_dff, context, f.backends);
  if (f.prefill_chunk)
    options.prefill_chunk =
        parse_int_strict(*f.prefill_chunk, "--prefill-chunk", 1, eng::kMaxPrefillChunk);
  if (ep) ep->apply(options);
  if (f.dump_draft_logits && !spec.mtp) fail("--dump-draft-logits needs --spec mtp");
  options.mtp = spec.mtp;
  auto engine = eng::Engine::open(f.model, options);
  load.done();
  if (ep) ep->quiet_other_ranks();

  // The tokenizer gives end-of-sequence ids however the prompt arrived (ids too, as mlx-lm
  // always loads it); its text is printed only for a text prompt.
  std::optional<Tokenizer> tok;
  if (prompt.from_text || std::filesystem::exists(f.model + "/tokenizer.json")) {
    tok = model::load_model_tokenizer(f.model);
  } else if (model::is_gguf_path(f.model)) {
    // Ids in, ids out: a GGUF tokenizer moex does not read (SentencePiece, ...) is no reason
    // to refuse; the metadata's eos / eot ids still stop generation (config).
    try {
      tok = model::load_model_tokenizer(f.model);
    } catch (const Error& e) {
      std::fprintf(stderr, "moex: note: no tokenizer (%s); printing ids only\n", e.what());
    }
  }
  const std::vector<int32_t> eos =
      model::stop_token_ids(cfg, gen, tok ? tok->eos_ids() : std::vector<int32_t>{});
  generate::GenerationParams params{.sampling = sampling.args, .logits = sampling.logits,
                                    .max_tokens = n, .min_tokens = 0, .ignore_eos = f.ignore_eos};
  generate::Generator generator(params, eos, engine->vocab(), prompt.ids);

  if (f.verbose) {
    std::fprintf(stderr,
                 "model %s: %s, %lld layers, %lld MoE layers; threads %d, isa %s, precision %s\n",
                 f.model.c_str(), cfg.family.c_str(), (long long)cfg.num_layers,
                 (long long)cfg.num_moe_layers(), num_threads(), isa_name(active_isa()),
                 kernels::active_precision_label());
    for (const auto& d : engine->decode_decisions()) {
      std::fprintf(stderr, "  layer %lld decode: routed experts %s\n", (long long)d.layer,
                   d.routed.explanation().c_str());
      if (d.shared)
        std::fprintf(stderr, "  layer %lld decode: shared expert %s\n", (long long)d.layer,
                     d.shared->explanation().c_str());
    }
    if (const auto st = engine->expert_parallel_stats())
      std::fprintf(stderr, "  expert parallel: rank %d of %d, %s; read %s of the checkpoint's %s "
                   "at open\n", st->rank, st->ranks, ep->placement().description().c_str(),
                   eng::format_bytes(int64_t(st->bytes_read_at_open)).c_str(),
                   eng::format_bytes(int64_t(engine->file_bytes())).c_str());
    std::string stops;
    for (int32_t e : eos) stops += (stops.empty() ? "" : ", ") + std::to_string(e);
    std::fprintf(stderr, "  stop at token ids [%s] (%s%s)\n", stops.c_str(),
                 gen.eos_token_ids.empty() ? "config.json" : "generation_config.json",
                 tok ? " + tokenizer" : "");
    if (!sampling_note.empty()) std::fprintf(stderr, "  %s\n", sampling_note.c_str());
    if (f.chat)
      std::fprintf(stderr, "  chat template %s: prompt of %zu tokens\n", template_origin.c_str(),
                   prompt.ids.size());
    if (prompt.ids.size() > 1)
      std::fprintf(stderr, "  prefill: %zu tokens in batches of at most %lld, MoE layers on the "
                   "fallback path (not_single_token)\n", prompt.ids.size(),
                   (long long)engine->prefill_chunk());
  }

  std::ofstream dump;
  if (f.dump_logits) {
    dump.open(*f.dump_logits, std::ios::binary);
    if (!dump) fail("--dump-logits: cannot write ", *f.dump_logits);
  }
  std::optional<StreamDecoder> stream;
  if (prompt.from_text) {
    stream.emplace(*tok);
    // The prompt's last token as context: text continues it (" world" after "Hello" keeps its
    // space with a SentencePiece decoder, which strips the space of the first token it sees).
    if (!prompt.ids.empty()) stream->prime({prompt.ids.back()});
  }

  // --spec mtp: the prompt's hidden states feed the module, so the drafter runs the prefill.
  std::optional<generate::MtpSpeculator> mtp;
  if (spec.mtp) mtp.emplace(*engine, engine->sequence());
  std::ofstream draft_dump;
  if (f.dump_draft_logits) {
    draft_dump.open(*f.dump_draft_logits, std::ios::binary);
    if (!draft_dump) fail("--dump-draft-logits: cannot write ", *f.dump_draft_logits);
    mtp->on_draft_logits = [&](int64_t position, const float* row) {
      const int64_t p = position;
      draft_dump.write(reinterpret_cast<const char*>(&p), sizeof(p));
      draft_dump.write(reinterpret_cast<const char*>(row), std::streamsize(engine->vocab() * 4));
    };
  }
  const double t0 = now_seconds();
  const float* logits = mtp ? mtp->prefill(prompt.ids.data(), int64_t(prompt.ids.size()))
                            : engine->prefill(prompt.ids);
  const double t1 = now_seconds();
  std::vector<int32_t> generated;
  double decode_time = 0;
  generate::SequenceDriver driver;
  driver.decode = [&](int32_t t) {
    const double a = now_seconds();
    const float* next = engine->decode(t);
    decode_time += now_seconds() - a;
    return next;
  };
  driver.context_full = [&] { return engine->position() >= engine->context(); };
  driver.on_step = [&](const generate::Step& st, const float* model_logits) {
    if (dump)
      dump.write(reinterpret_cast<const char*>(model_logits), std::streamsize(engine->vocab() * 4));
    const size_t i = generated.size();
    generated.push_back(st.token);
    if (stream)
      std::cout << stream->step(st.token) << std::flush;
    else
      std::cout << (i ? " " : "") << st.token << std::flush;
    return true;
  };
  generate::RunResult run;
  std::optional<generate::SpecStats> spec_stats;
  int64_t reruns = 0;
  if (mtp) {
    generate::SpecDriver sd = mtp->driver();
    sd.on_step = driver.on_step;
    const double a = now_seconds();
    const generate::SpecResult sr = generate::run_speculative(
        generator, logits, prompt.ids, *mtp, spec.draft, engine->vocab(), sd);
    run.end = sr.end;
    run.decode_steps = sr.stats.passes;
    spec_stats = sr.stats;
    decode_time = now_seconds() - a;  // the passes and the module's drafts
    reruns = mtp->reruns();
  } else if (spec.on) {
    generate::EngineVerifier verifier(*engine, engine->sequence());
    generate::SpecDriver sd = verifier.driver();
    sd.on_step = driver.on_step;
    generate::NgramDrafter drafter(spec.ngram);
    const generate::SpecResult sr = generate::run_speculative(
        generator, logits, prompt.ids, drafter, spec.draft, engine->vocab(), sd);
    run.end = sr.end;
    run.decode_steps = sr.stats.passes;
    spec_stats = sr.stats;
    decode_time = verifier.verify_seconds();
    reruns = verifier.reruns();
  } else {
    run = generate::run_sequence(generator, logits, driver);
  }
  const int64_t decode_steps = run.decode_steps;
  const bool context_full = run.end == generate::RunEnd::kContext;
  if (stream) std::cout << stream->flush();
  std::cout << std::endl;
  if (context_full)
    std::fprintf(stderr,
                 "generate: stopped at the context limit after %zu of %lld tokens "
                 "(prompt %lld + generated = max_position_embeddings %lld in %s)\n",
                 generated.size(), (long long)n, (long long)prompt_tokens,
                 (long long)cfg.max_position, cfg.source.c_str());

  // A measurement past its minimum window but still narrowing a wide band keeps what it has.
  engine->conclude_policy_measurement();
  if (f.dump_logits) {
    nlohmann::json meta = {{"prompt_ids", prompt.ids}, {"generated_ids", generated},
                           {"vocab", engine->vocab()}, {"steps", generated.size()}};
    write_file_atomic(*f.dump_logits + ".json", meta.dump() + "\n", "--dump-logits token ids");
  }
  const double prefill_s = t1 - t0;
  std::fprintf(stderr, "prompt: %zu tokens, %.3f s, %.2f tokens/s\n", prompt.ids.size(), prefill_s,
               double(prompt.ids.size()) / std::max(prefill_s, 1e-9));
  if (spec_stats) {
    // Tokens after the first (which the prompt's logits give) over the passes' time.
    const generate::SpecStats& st = *spec_stats;
    std::fprintf(stderr, "generate: %zu tokens (%lld passes), %.3f s, %.2f tokens/s\n",
                 generated.size(), (long long)st.passes, decode_time,
                 st.tokens ? double(st.tokens) / decode_time : 0.0);
    std::fprintf(stderr, "speculative (%s): %lld of %lld drafts "
                 "accepted (%.1f%%), %.2f tokens per pass%s\n",
                 spec.label().c_str(), (long long)st.accepted, (long long)st.drafted, 100.0 * st.acceptance(),
                 st.tokens_per_pass(),
                 reruns ? (", " + std::to_string(reruns) + " passes rerun to rewind recurrent "
                           "states").c_str() : "");
    if (mtp)
      std::fprintf(stderr, "mtp module: %.3f s over the prompt (in the prompt's time), %.3f s "
                   "drafting, %.3f s in the main model's passes\n",
                   mtp->module_prefill_seconds(), mtp->draft_seconds(), mtp->verify_seconds());
  } else {
    std::fprintf(stderr, "generate: %zu tokens (%lld decode steps), %.3f s, %.2f tokens/s\n",
                 generated.size(), (long long)decode_steps, decode_time,
                 decode_steps ? double(decode_steps) / decode_time : 0.0);
  }
  std::fprintf(stderr, "peak memory: %s resident (weights %s %s, KV cache %s, scratch %s)\n",
               eng::format_bytes(peak_rss_bytes()).c_str(),
               eng::format_bytes(int64_t(engine->file_bytes())).c_str(),
               io::weight_residency() == io::WeightResidency::kCopy ? "copied" : "mapped",
               eng::format_bytes(engine->kv_cache_bytes()).c_str(),
               eng::format_bytes(engine->scratch_bytes()).c_str());
  if (f.verbose) {
    std::fprintf(stderr, "dispatch policy at load: %s\n", engine->policy_measurement_plan().c_str());
    for (const std::string& line : engine->policy_measurement_report())
      std::fprintf(stderr, "dispatch policy measured on this host: %s\n", line.c_str());
    if (engine->measuring_policy())
      std::fprintf(stderr, "dispatch policy: the online measurement needs %d decode steps; this "
                   "run stopped before (nothing recorded)\n",
                   moe::OnlineMeasurement::min_total_steps());
    std::fprintf(stderr, "%s\n", engine->counters().report().c_str());
  }
  return 0;
}

CommandSetup generate_setup = [](CLI::App& sub) -> std::function<int()> {
  auto f = std::make_shared<GenerateFlags>();
  sub.add_option("-m,--model", f->model, "model directory (config.json + safetensors) or GGUF file")
      ->type_name("DIR")
      ->required();
  sub.add_option("-p,--prompt", f->prompt, "prompt text (encoded with DIR/tokenizer.json)");
  sub.add_option("--prompt-ids", f->prompt_ids, "prompt as token ids, e.g. 1,2,3 (wins over -p)")
      ->type_name("IDS");
  sub.add_option("-n,--max-tokens", f->n,
                 "most tokens to generate (default 128); stops at EOS and at the context limit")
      ->type_name("INT");
  sub.add_flag("--chat", f->chat,
               "render -p as a user turn of DIR's chat template (ending in the assistant's "
               "header), as mlx_lm.generate does");
  sub.add_option("--system", f->system, "a system turn before -p (with --chat)")
      ->type_name("TEXT");
  add_sampling_options(sub, f->sampling);
  add_spec_options(sub, f->spec);
  add_expert_parallel_flags(sub, &f->expert_parallel);
  sub.add_option("--fused", f->fused, "fused MoE decode path: auto (cap applies), on, off");
  sub.add_option("--max-dff", f->max_dff, "Dff cap of the fused path in auto mode")
      ->type_name("INT");
  add_cpu_run_options(sub, &f->threads, &f->precision, &f->weights, &f->isa, &f->kv_cache);
  add_backend_options(sub, &f->backends);
  sub.add_option("--prefill-chunk", f->prefill_chunk,
                 "prompt tokens per prefill batch, 1-65536 (default 512): bounds prefill memory")
      ->type_name("INT");
  sub.add_option("--dump-logits", f->dump_logits,
                 "write each step's logits (f32) to this file and the token ids to FILE.json")
      ->group("");  // for the reference tests
  sub.add_option("--dump-draft-logits", f->dump_draft_logits,
                 "with --spec mtp: write the module's logits of each first draft (int64 "
                 "position, then f32 logits) to this file")
      ->group("");  // for the reference tests
  sub.add_flag("--ignore-eos", f->ignore_eos, "generate exactly -n tokens")->group("");
  sub.add_flag("-v,--verbose", f->verbose, "print MoE dispatch decisions and path counters");
  return [f] { return run_generate(*f); };
};

MOEX_REGISTER_COMMAND(generate, "generate", "generate text from a prompt", generate_setup);

}  // namespace
}  // namespace moex::tools
