// `moex chat`: a conversation on stdin/stdout through the model's chat template. Each turn
// renders the whole conversation and runs only the tokens after those the engine already
// holds (EngineSession); /reset starts over, /exit or EOF quits, Ctrl-C stops a prompt being
// read in or an answer. Turns are read by util_line_reader (readline on a terminal). With
// --spec ngram the answers decode speculatively, drafts looked up in the whole conversation.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/atomic_write.h"
#include "core/error.h"
#include "core/strict_parse.h"
#include "core/sysinfo.h"
#include "model/engine/engine.h"
#include "model/engine/run_setup.h"
#include "model/gguf/gguf_model.h"
#include "model/engine/session.h"
#include "model/family_registry.h"
#include "model/generation_config.h"
#include "generate/engine_verifier.h"
#include "generate/generator.h"
#include "generate/mtp_draft.h"
#include "generate/speculative.h"
#include "serve/chat_prompt.h"
#include "tokenizer/tokenizer.h"
#include "tools/command.h"
#include "tools/util_flags.h"
#include "tools/util_line_reader.h"
#include "tools/util_progress.h"
#include "tools/util_sampling.h"
#include "tools/util_spec.h"

namespace moex::tools {
namespace {

namespace eng = moex::model::engine;
using serve::ChatPrompt;
using serve::chat_message;

struct ChatFlags {
  std::string model;
  std::optional<std::string> system, n, threads, precision, weights, kv_cache, fused, context,
      dump_turns;
  eng::BackendFlags backends;  // --backend, --experts-on, --n-cpu-moe
  SamplingFlags sampling;
  SpecFlags spec;
  bool verbose = false;
};

// Set by SIGINT while a turn runs; checked between prompt pieces and between answer tokens.
std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);
extern "C" void on_sigint(int) { g_interrupted.store(true); }

// While alive, Ctrl-C stops the answer instead of the program; outside it (at the prompt)
// SIGINT keeps its default action and quits.
class InterruptScope {
 public:
  InterruptScope() {
    g_interrupted.store(false);
    struct sigaction sa = {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_);
  }
  ~InterruptScope() { sigaction(SIGINT, &old_, nullptr); }

 private:
  struct sigaction old_ = {};
};

// How an answer ended, as --dump-turns writes it.
const char* stop_name(generate::RunEnd e) {
  switch (e) {
    case generate::RunEnd::kStop: return "stop_token";
    case generate::RunEnd::kLength: return "max_tokens";
    case generate::RunEnd::kContext: return "context";
    case generate::RunEnd::kInterrupted: return "interrupted";
  }
  return "";
}

struct Answer {
  std::vector<int32_t> ids;  // as sampled, the stop token included
  std::string text;          // without the stop token's text
  generate::RunEnd end = generate::RunEnd::kLength;
  int64_t timed_tokens = 0;  // tokens after the first (decode steps without --spec)
  std::optional<generate::SpecStats> spec;
  int64_t reruns = 0;  // speculative passes run again to rewind recurrent states
};

// Speculative decoding through the session: the verifier runs the session's sequence, and
// the session's ids follow what it ran and kept. `history` is the conversation's tokens.
// `mtp`: the conversation's MTP drafter (--spec mtp), else prompt lookup.
generate::SpecResult run_speculative_turn(eng::EngineSession& session, const float* logits,
                                          generate::Generator& gen, const SpecSetup& spec,
                                          const std::vector<int32_t>& history,
                                          const generate::SequenceDriver& plain, int64_t& reruns,
                                          generate::MtpSpeculator* mtp) {
  eng::Engine& e = session.engine();
  generate::EngineVerifier verifier(e, e.sequence());
  generate::SpecDriver d = mtp ? mtp->driver() : verifier.driver();
  const auto verify = d.verify;
  const auto keep = d.keep;
  d.verify = [&](const int32_t* t, int64_t n) {
    const float* rows = verify(t, n);
    session.ran(t, n);
    return rows;
  };
  d.keep = [&](const int32_t* t, int64_t n, int64_t kept) {
    keep(t, n, kept);
    session.dropped(n - kept);
  };
  d.on_step = plain.on_step;
  generate::NgramDrafter lookup(spec.ngram);
  generate::Drafter& drafter = mtp ? static_cast<generate::Drafter&>(*mtp) : lookup;
  const generate::SpecResult r =
      generate::run_speculative(gen, logits, history, drafter, spec.draft, e.vocab(), d);
  reruns = mtp ? mtp->reruns() : verifier.reruns();
  return r;
}

// Samples until a stop id, -n tokens, the end of the context or Ctrl-C, streaming the text.
Answer generate_answer(eng::EngineSession& session, const float* logits,
                       generate::Generator& gen, const Tokenizer& tok, const SpecSetup& spec,
                       const std::vector<int32_t>& conversation, generate::MtpSpeculator* mtp) {
  Answer r;
  StreamDecoder stream(tok);
  eng::Engine& e = session.engine();
  auto emit = [&](const std::string& s) {
    r.text += s;
    std::cout << s << std::flush;
  };
  generate::SequenceDriver driver;
  driver.decode = [&](int32_t t) { return session.decode(t); };
  driver.context_full = [&] { return e.position() >= e.context(); };
  driver.on_step = [&](const generate::Step& st, const float*) {
    r.ids.push_back(st.token);
    if (st.end != generate::StepEnd::kStop) emit(stream.step(st.token));
    return !g_interrupted.load();
  };
  if (spec.on) {
    const generate::SpecResult run =
        run_speculative_turn(session, logits, gen, spec, conversation, driver, r.reruns, mtp);
    r.end = run.end;
    r.timed_tokens = run.stats.tokens;
    r.spec = run.stats;
  } else {
    const generate::RunResult run = generate::run_sequence(gen, logits, driver);
    r.end = run.end;
    r.timed_tokens = run.decode_steps;
  }
  emit(stream.flush());
  return r;
}

// Tokens per piece of a turn's prompt: Ctrl-C is seen between pieces, so a long paste can be
// stopped while it is read in (a few seconds of prefill at most on the large shapes).
constexpr int64_t kPromptPiece = 256;

// Runs the turn's prompt through the session a piece at a time: each piece extends what the
// session holds, so only its new tokens run (the same arithmetic as one call: the engine's
// rows are computed one by one within its own prefill chunks). nullopt when Ctrl-C stopped it.
std::optional<eng::EngineSession::Prefill> prefill_in_pieces(
    eng::EngineSession& session, const std::vector<int32_t>& ids,
    const std::function<void()>& after_piece) {
  eng::EngineSession::Prefill total;
  const int64_t kept = eng::reusable_prefix(session.ids(), ids);
  for (int64_t end = std::min<int64_t>(int64_t(ids.size()), kept + kPromptPiece);;
       end = std::min<int64_t>(int64_t(ids.size()), end + kPromptPiece)) {
    const std::vector<int32_t> piece(ids.begin(), ids.begin() + end);
    const eng::EngineSession::Prefill p = session.prefill(piece);
    if (after_piece) after_piece();
    if (total.logits == nullptr) total.reused = p.reused;
    total.logits = p.logits;
    total.prefilled += p.prefilled;
    total.rebuilt = total.rebuilt || p.rebuilt;
    if (end == int64_t(ids.size())) return total;
    if (g_interrupted.load()) return std::nullopt;
  }
}

int run_chat(const ChatFlags& f) {
  if (f.threads) parse_threads_flag(*f.threads);
  eng::apply_cpu_settings(f.threads, std::nullopt, lowercase_opt(f.precision),
                          lowercase_opt(f.weights),
                          lowercase_opt(f.kv_cache));
  const int64_t n = f.n ? parse_int_strict(*f.n, "-n", 1, int64_t{1} << 30) : 512;
  const int64_t context = f.context ? parse_int_strict(*f.context, "--context", 2, INT32_MAX) : 0;
  eng::parse_backend_choice(f.backends);  // a malformed flag fails before the model loads
  const model::ModelConfig cfg = model::load_model_config(f.model);
  const model::GenerationConfig gen = model::load_generation_config(f.model, cfg.vocab);
  const SamplingSetup sampling = sampling_setup(f.sampling, gen);
  const SpecSetup spec = spec_setup(f.spec);
  note_random_seed("chat", sampling, sampling.args.temperature == 0.0, f.verbose);
  const Tokenizer tok = model::load_model_tokenizer(f.model);
  const ChatPrompt prompt(f.model, tok);
  const std::vector<int32_t> stops = model::stop_token_ids(cfg, gen, tok.eos_ids());

  const LoadProgress load("chat", f.model);
  eng::EngineOptions options = eng::engine_options(f.fused, std::nullopt, context, f.backends);
  options.mtp = spec.mtp;
  auto engine = eng::Engine::open(f.model, options);
  load.done();
  // LFM2's short-conv layers cannot be truncated: the session then resets and re-runs the
  // whole conversation whenever it is rendered differently from what the engine holds.
  eng::EngineSession session(*engine);
  // --spec mtp: the module's state follows the session's sequence across turns.
  std::optional<generate::MtpSpeculator> mtp;
  if (spec.mtp) mtp.emplace(*engine, engine->sequence());
  if (f.verbose) {
    std::fprintf(stderr, "chat: template %s; context %lld tokens; %s\n", prompt.origin().c_str(),
                 (long long)engine->context(),
                 engine->can_truncate() ? "the KV cache is truncated to the common prefix"
                                        : "short-conv layers: a changed prefix re-runs it all");
    if (!sampling.defaults_note.empty())
      std::fprintf(stderr, "  %s\n", sampling.defaults_note.c_str());
  }

  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  auto start_conversation = [&] {
    messages = nlohmann::ordered_json::array();
    if (f.system) messages.push_back(chat_message("system", *f.system));
  };
  start_conversation();
  nlohmann::json dump = nlohmann::json::array();
  const std::unique_ptr<LineReader> reader = open_stdin_reader();
  if (f.verbose) std::fprintf(stderr, "chat: input read as %s\n", reader->name());
  const bool tty = isatty(STDIN_FILENO);
  for (;;) {
    const std::optional<std::string> turn = reader->read_turn("> ");
    if (!turn) break;
    const std::string& line = *turn;
    if (line == "/exit") break;
    if (line == "/reset") {
      start_conversation();
      session.reset();
      if (mtp) mtp->rewind(0);
      std::fprintf(stderr, "chat: conversation cleared\n");
      continue;
    }
    if (line.empty()) continue;
    messages.push_back(chat_message("user", line));
    const std::vector<int32_t> ids = prompt.ids(messages);
    // The prompt and at least the position of one answer token must fit.
    if (int64_t(ids.size()) >= engine->context()) {
      messages.erase(messages.end() - 1);
      std::fprintf(stderr,
                   "chat: the conversation is full (%zu prompt tokens, context %lld); /reset "
                   "to start a new one\n",
                   ids.size(), (long long)engine->context());
      continue;
    }
    Answer a;
    eng::EngineSession::Prefill p;
    double t_prefill = 0, t_decode = 0;
    {
      InterruptScope interrupts;
      const double t0 = now_seconds();
      const int64_t to_run = int64_t(ids.size()) - eng::reusable_prefix(session.ids(), ids);
      if (f.verbose && to_run > kPromptPiece)
        std::fprintf(stderr, "chat: turn %zu: running %lld prompt tokens (Ctrl-C stops)\n",
                     dump.size() + 1, (long long)to_run);
      // The module follows the session: cut where the session keeps the conversation, fed
      // the hidden states of what the prompt runs, then run over the rows it can.
      // (A model with recurrent states that cannot cut there starts over: so does the module.)
      if (mtp) {
        const int64_t keep = eng::reusable_prefix(session.ids(), ids);
        const bool cuts = keep == engine->position() || engine->sequence().can_truncate();
        mtp->rewind(cuts ? keep : 0);
      }
      std::optional<eng::EngineSession::Prefill> read_in;
      {
        const eng::Engine::HiddenCapture capture(*engine, mtp ? mtp->hidden_sink() : nullptr);
        read_in = prefill_in_pieces(session, ids, [&] {
          if (mtp) mtp->catch_up(session.ids().data(), int64_t(session.ids().size()));
        });
      }
      if (!read_in) {
        // The turn never happened: the next one renders the conversation without it and
        // keeps what the engine ran of the common prefix.
        messages.erase(messages.end() - 1);
        std::cout << std::endl;  // the next prompt starts on a line of its own, after "^C"
        std::fprintf(stderr, "chat: prompt stopped (Ctrl-C) after %zu of %zu tokens; the "
                     "message was dropped\n", session.ids().size(), ids.size());
        continue;
      }
      p = *read_in;
      t_prefill = now_seconds() - t0;
      // One Generator per answer, as the server has one per request: its penalties read the
      // conversation so far (this turn's prompt) and the answer. Answer k samples with seed
      // + k, so a --seed run repeats turn by turn.
      generate::GenerationParams params{.sampling = sampling.args, .logits = sampling.logits,
                                        .max_tokens = n, .min_tokens = 0, .ignore_eos = false};
      params.sampling.seed = sampling.args.seed + uint64_t(dump.size());
      generate::Generator generator(params, stops, engine->vocab(), ids);
      a = generate_answer(session, p.logits, generator, tok, spec, ids, mtp ? &*mtp : nullptr);
      t_decode = now_seconds() - t0 - t_prefill;
    }
    std::cout << std::endl;
    if (a.end == generate::RunEnd::kInterrupted) std::fprintf(stderr, "chat: answer stopped (Ctrl-C)\n");
    if (a.end == generate::RunEnd::kContext)
      std::fprintf(stderr, "chat: answer stopped at the context limit (%lld tokens); /reset to "
                   "start a new conversation\n", (long long)engine->context());
    messages.push_back(chat_message("assistant", a.text));
    if (f.verbose)
      std::fprintf(stderr,
                   "chat: turn %zu: prompt %zu tokens (%lld kept, %lld run%s, %.3f s); answer "
                   "%zu tokens (%.2f tokens/s, %s)\n",
                   dump.size() + 1, ids.size(), (long long)p.reused, (long long)p.prefilled,
                   p.rebuilt ? ", engine reset" : "", t_prefill, a.ids.size(),
                   a.timed_tokens ? double(a.timed_tokens) / t_decode : 0.0, stop_name(a.end));
    if (f.verbose && a.spec)
      std::fprintf(stderr,
                   "chat: turn %zu: speculative (%s): %lld of %lld "
                   "drafts accepted, %lld passes, %lld rerun to rewind recurrent states\n",
                   dump.size() + 1, spec.label().c_str(), (long long)a.spec->accepted,
                   (long long)a.spec->drafted, (long long)a.spec->passes, (long long)a.reruns);
    dump.push_back({{"user", line}, {"prompt_ids", ids}, {"reused", p.reused},
                    {"prefilled", p.prefilled}, {"rebuilt", p.rebuilt}, {"generated_ids", a.ids},
                    {"answer", a.text}, {"stop", stop_name(a.end)}});
    if (a.spec)
      dump.back()["spec"] = {{"passes", a.spec->passes}, {"drafted", a.spec->drafted},
                             {"accepted", a.spec->accepted}, {"reruns", a.reruns}};
    if (f.dump_turns) write_file_atomic(*f.dump_turns, dump.dump() + "\n", "--dump-turns");
  }
  if (tty) std::cout << std::endl;
  return 0;
}

CommandSetup chat_setup = [](CLI::App& sub) -> std::function<int()> {
  auto f = std::make_shared<ChatFlags>();
  sub.footer("Type a message and Enter; a pasted block is one message, and typed text spans "
             "lines between two lines of \"\"\". On a terminal the line can be edited and Up / "
             "Down recall earlier messages (GNU readline, where the build has it). /reset "
             "clears the conversation, /exit or end of input quits; Ctrl-C stops a prompt being "
             "read in or an answer (at the prompt it quits).");
  sub.add_option("-m,--model", f->model, "model directory (config.json, safetensors, tokenizer "
                 "and chat template)")
      ->type_name("DIR")
      ->required();
  sub.add_option("--system", f->system, "system turn at the start of every conversation")
      ->type_name("TEXT");
  sub.add_option("-n,--max-tokens", f->n, "most tokens per answer (default 512)")
      ->type_name("INT");
  add_sampling_options(sub, f->sampling);
  add_spec_options(sub, f->spec);
  sub.add_option("--context", f->context,
                 "KV cache capacity in tokens (default: max_position_embeddings, at most 4096)")
      ->type_name("INT");
  add_cpu_run_options(sub, &f->threads, &f->precision, &f->weights, nullptr, &f->kv_cache);
  sub.add_option("--fused", f->fused, "fused MoE decode path: auto (cap applies), on, off");
  add_backend_options(sub, &f->backends);
  sub.add_option("--dump-turns", f->dump_turns,
                 "write each turn's prompt ids, reused and run counts and answer ids as JSON")
      ->group("");  // for the reference tests
  sub.add_flag("-v,--verbose", f->verbose, "print each turn's token counts and speed");
  return [f] { return run_chat(*f); };
};

MOEX_REGISTER_COMMAND(chat, "chat", "chat with a model through its chat template", chat_setup);

}  // namespace
}  // namespace moex::tools
