// `moex serve`: an OpenAI-compatible HTTP server (chat and text completions, streaming, the
// model list, health) over one engine whose scheduler decodes up to --parallel requests
// together. SIGINT / SIGTERM stop accepting, cancel what runs and exit 0.
#include <malloc.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "chat/template_files.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/strict_parse.h"
#include "core/sysinfo.h"
#include "model/engine/engine.h"
#include "model/engine/run_setup.h"
#include "model/gguf/gguf_model.h"
#include "model/family_registry.h"
#include "model/generation_config.h"
#include "serve/chat_prompt.h"
#include "serve/http_access.h"
#include "serve/http_server.h"
#include "serve/parallel_default.h"
#include "serve/request.h"
#include "serve/request_tools.h"
#include "serve/scheduler.h"
#include "serve/structured_output.h"
#include "tokenizer/tokenizer.h"
#include "tools/command.h"
#include "tools/util_expert_parallel.h"
#include "tools/util_flags.h"
#include "tools/util_progress.h"
#include "tools/util_spec.h"

namespace moex::tools {
namespace {

namespace eng = moex::model::engine;

struct ServeFlags {
  std::string model;
  std::optional<std::string> host, port, parallel, ctx_size, api_key, alias, threads, precision, weights,
      kv_cache,
      fused, max_dff, reasoning_format, test_replies, cache_ram, batch_tokens;
  eng::BackendFlags backends;  // --backend, --experts-on, --n-cpu-moe
  ExpertParallelFlags expert_parallel;
  SpecFlags spec;
  bool health_needs_key = false;
  std::vector<std::string> cors_origins;
  bool verbose = false;
};

// Requests waiting for a slot beyond the running ones; more are refused with 503.
constexpr int64_t kQueueLimit = 64;
// --cache-ram's largest value (1 TiB).
constexpr int64_t kMaxCacheRamMiB = int64_t{1} << 20;

// The served name: --alias, else the model directory's name.
std::string model_name(const ServeFlags& f) {
  if (f.alias) {
    if (f.alias->empty()) fail("--alias: expected a name, got an empty string");
    return *f.alias;
  }
  std::filesystem::path p = std::filesystem::absolute(f.model).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

// Without a usable template, *refusal says why (chat requests are answered with it).
std::optional<serve::ChatPrompt> load_chat_prompt(const std::string& dir, const Tokenizer& tok,
                                                  std::string* refusal) {
  try {
    return serve::ChatPrompt(dir, tok);
  } catch (const Error& e) {
    std::fprintf(stderr,
                 "moex serve: %s; /v1/chat/completions refuses requests (use "
                 "/v1/completions)\n",
                 e.what());
    *refusal = e.what();
    return std::nullopt;
  }
}

// SIGINT and SIGTERM are blocked in every thread (set before any is started) and taken by
// one thread with sigwait: the first starts the shutdown on a thread of its own (it waits
// for the handlers), so that a second signal is still taken and exits at once.
class SignalWatcher {
 public:
  SignalWatcher() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
    std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error return, not death
  }
  void start(std::function<void()> on_signal) {
    thread_ = std::thread([this, on_signal = std::move(on_signal)] {
      int sig = 0;
      for (int n = 0;; ++n) {
        if (sigwait(&set_, &sig) != 0 || done_.load()) return;
        if (n > 0) {
          std::fprintf(stderr, "moex serve: second signal, exiting now\n");
          _exit(1);
        }
        std::fprintf(stderr, "moex serve: %s: shutting down\n",
                     sig == SIGINT ? "SIGINT" : "SIGTERM");
        shutdown_ = std::thread(on_signal);
      }
    });
  }
  // Ends the threads (before what on_signal touches is destroyed).
  void stop() {
    if (!thread_.joinable()) return;
    done_.store(true);
    pthread_kill(thread_.native_handle(), SIGTERM);  // wakes sigwait
    thread_.join();
    if (shutdown_.joinable()) shutdown_.join();
  }
  ~SignalWatcher() { stop(); }

 private:
  sigset_t set_;
  std::atomic<bool> done_{false};
  std::thread thread_, shutdown_;
};

int run_serve(const ServeFlags& f) {
  // glibc gives each thread that allocates while another holds the lock an arena of its own
  // (up to 8 per core) and keeps what they free: a body and its JSON on each of the ~70
  // handler threads stayed resident (94 MB -> 953 MB after 40 refused 8 MiB bodies). Four
  // arenas bound that; the handlers also trim after a large request (docs/serve.md).
  mallopt(M_ARENA_MAX, 4);
  SignalWatcher signals;
  if (f.threads) parse_threads_flag(*f.threads);
  eng::apply_cpu_settings(f.threads, std::nullopt, lowercase_opt(f.precision),
                          lowercase_opt(f.weights),
                          lowercase_opt(f.kv_cache));
  serve::HttpOptions http;
  if (f.host) {
    if (f.host->empty()) fail("--host: expected an address, got an empty string");
    http.host = *f.host;
  }
  if (f.port) http.port = int(parse_int_strict(*f.port, "--port", 0, 65535));
  // 0: chosen once the model is open (the KV cache's size is known then).
  int parallel =
      f.parallel ? int(parse_int_strict(*f.parallel, "--parallel", 1, serve::kMaxParallel)) : 0;
  const int64_t context =
      f.ctx_size ? parse_int_strict(*f.ctx_size, "--ctx-size", 2, INT32_MAX) : 0;
  // -1: chosen once the slots are known (their KV caches come first).
  int64_t cache_ram_mib =
      f.cache_ram ? parse_int_strict(*f.cache_ram, "--cache-ram", 0, kMaxCacheRamMiB) : -1;
  const int64_t batch_tokens =
      f.batch_tokens
          ? parse_int_strict(*f.batch_tokens, "--batch-tokens", 1, serve::kMaxBatchTokens)
          : 0;
  const SpecSetup spec = spec_setup(f.spec);
  // The other ranks would follow rank 0 by running the same tokens; a rewind is not announced.
  if (spec.on && f.expert_parallel.on)
    fail("--spec: speculative decoding does not run with --expert-parallel yet");
  if (f.api_key) {
    if (f.api_key->empty()) fail("--api-key: expected a key, got an empty string");
    http.api_key = *f.api_key;
  }
  if (f.health_needs_key && !f.api_key) fail("--health-needs-key: there is no --api-key to need");
  http.health_needs_key = f.health_needs_key;
  http.cors_origins = f.cors_origins;
  {  // the origins are checked before the model loads
    serve::AccessOptions check;
    check.cors_origins = http.cors_origins;
    (void)serve::Access(check);
  }
  const std::string name = model_name(f);

  const model::ModelConfig cfg = model::load_model_config(f.model);
  // With --spec mtp the prompt cache keeps the module's rows too, but a model with recurrent
  // layers has none to load (serve/scheduler.cc).
  const bool mtp_recurrent = spec.mtp && model::recurrent_state_bytes(cfg) > 0;
  if (mtp_recurrent && cache_ram_mib > 0)
    fail("--cache-ram: the prompt cache does not serve a model with recurrent layers (",
         cfg.family, ") with --spec mtp; give --cache-ram 0 or leave it out");
  serve::ServedModel served;
  served.name = name;
  served.generation = model::load_generation_config(f.model, cfg.vocab);
  served.vocab = cfg.vocab;
  if (!model::is_gguf_path(f.model) && !std::filesystem::exists(f.model + "/tokenizer.json"))
    fail(f.model, ": no tokenizer.json: moex serve answers in text and needs the tokenizer");
  const Tokenizer tok = model::load_model_tokenizer(f.model);
  served.tokenizer = &tok;
  const std::optional<serve::ChatPrompt> chat =
      load_chat_prompt(f.model, tok, &served.chat_refusal);
  if (chat) served.chat = &*chat;
  if (f.reasoning_format) {
    if (*f.reasoning_format != "none" && *f.reasoning_format != "deepseek")
      fail("--reasoning-format: expected none or deepseek, got '", *f.reasoning_format, "'");
    served.reasoning_split = *f.reasoning_format == "deepseek";
  }
  if (f.test_replies) {  // hidden: end-to-end tests of the output parsers
    const nlohmann::ordered_json j =
        chat::read_json_file_ordered(*f.test_replies, "--test-replies");
    if (!j.is_array() || j.empty()) fail("--test-replies: expected a non-empty JSON array of texts");
    served.test_replies = std::make_shared<serve::TestReplies>();
    for (const auto& r : j) {
      if (!r.is_string()) fail("--test-replies: expected a non-empty JSON array of texts");
      served.test_replies->replies.push_back(tok.encode(r.get<std::string>(), false));
    }
    std::fprintf(stderr, "moex serve: TEST HOOK: answers replaced by the %zu replies of %s\n",
                 j.size(), f.test_replies->c_str());
  }
  if (chat)  // what reads the answers (docs/serve.md, "Tool calls and reasoning")
    std::fprintf(
        stderr, "moex serve: tool-call parser %s, reasoning %s%s%s\n",
        generate::tool_call_format_name(chat->tool_call_format()),
        generate::reasoning_format_name(chat->reasoning_format()),
        served.reasoning_split || chat->reasoning_format() == generate::ReasoningFormat::kNone
            ? ""
            : " (--reasoning-format none: left in the content)",
        chat->developer_as_system() ? ", developer messages as system" : "");
  std::vector<int32_t> stop_ids = model::stop_token_ids(cfg, served.generation, tok.eos_ids());
  // gpt-oss (harmony) ends a tool call with <|call|>; a checkpoint whose files list only
  // <|return|> (no generation_config.json) would run past it. llama.cpp treats the token as an
  // end of generation by its text; so does moex, saying so.
  if (chat && chat->tool_call_format() == generate::ToolCallFormat::kHarmony) {
    const std::optional<int32_t> call = tok.token_to_id("<|call|>");
    if (call && std::find(stop_ids.begin(), stop_ids.end(), *call) == stop_ids.end()) {
      stop_ids.push_back(*call);
      std::fprintf(stderr, "moex serve: <|call|> (id %d) added to the stop ids: harmony ends a "
                   "tool call with it and the checkpoint does not list it\n", *call);
    }
  }
  // Structured output: the vocabulary given to the grammar engine, when the build has one.
  std::optional<generate::GrammarEngine> grammar;
  if (generate::GrammarEngine::available()) {
    // The special tokens that constrained tool calls write (GLM-4.5's <arg_key>, ...) go in
    // as their text; the others stay out.
    grammar.emplace(serve::grammar_vocabulary(tok, cfg.vocab,
                                              chat ? serve::grammar_markers(*chat)
                                                   : std::vector<std::string>{}),
                    stop_ids);
    served.grammar = &*grammar;
  }

  ExpertParallelRun* ep = ExpertParallelRun::start(f.expert_parallel, f.model);
  // The followers keep their own copies of the sequences and follow rank 0 only by running
  // the same tokens: they could not load a cached state.
  if (ep && cache_ram_mib > 0)
    fail("--cache-ram: the prompt cache does not work with --expert-parallel (the other ranks "
         "cannot load a cached state); give --cache-ram 0 or leave it out");
  require_mapped_weights(ep);
  eng::EngineOptions options =
      eng::engine_options(f.fused, f.max_dff, context, f.backends);
  if (ep) ep->apply(options);
  options.mtp = spec.mtp;
  const LoadProgress load("serve", f.model);
  auto engine = eng::Engine::open(f.model, options);
  load.done();
  if (ep && !ep->root()) {  // replays rank 0's steps until it releases the ranks
    engine->follow_leader();
    return 0;
  }
  if (ep) engine->lead_followers();
  served.context = engine->context();
  if (parallel == 0) {  // what the threads and the memory for KV caches allow (docs/serve.md)
    const serve::ParallelChoice choice =
        serve::default_parallel(num_threads(), mem_available_bytes(), engine->kv_cache_bytes());
    parallel = choice.slots;
    std::fprintf(stderr, "moex serve: --parallel %d (default: %s)\n", parallel,
                 choice.reason.c_str());
  }
  if (!f.batch_tokens)
    std::fprintf(stderr, "moex serve: --batch-tokens %lld (default: 32 per thread x %d, 64 to 2048)\n",
                 (long long)serve::default_batch_tokens(num_threads()), num_threads());
  if (ep || mtp_recurrent) {
    cache_ram_mib = 0;
    std::fprintf(stderr, "moex serve: prompt cache off (%s)\n",
                 ep ? "expert parallelism"
                    : "--spec mtp on a model with recurrent layers; each slot still reuses its "
                      "own prefix");
  } else if (cache_ram_mib < 0) {
    const serve::CacheRamChoice choice = serve::default_cache_ram(
        mem_available_bytes(), int64_t(parallel) * engine->kv_cache_bytes());
    cache_ram_mib = choice.mib;
    std::fprintf(stderr, "moex serve: --cache-ram %lld MiB (default: %s)\n",
                 (long long)cache_ram_mib, choice.reason.c_str());
  } else {
    std::fprintf(stderr, "moex serve: --cache-ram %lld MiB%s\n", (long long)cache_ram_mib,
                 cache_ram_mib == 0 ? ": prompt cache off" : "");
  }
  serve::Scheduler scheduler(*engine, {.parallel = parallel,
                                       .queue_limit = kQueueLimit,
                                       .stop_ids = stop_ids,
                                       .prompt_cache_bytes = cache_ram_mib << 20,
                                       .batch_tokens = batch_tokens,
                                       .spec = {.on = spec.on,
                                                .draft = spec.draft,
                                                .ngram = spec.ngram,
                                                .mtp = spec.mtp}});
  if (spec.on)
    std::fprintf(stderr, "moex serve: speculative decoding: %s\n", spec.label().c_str());
  http.parallel = parallel;
  http.threads = parallel + int(kQueueLimit) + 4;  // every queued request holds a connection
  http.verbose = f.verbose;
  serve::HttpServer server(scheduler, served, http);
  const int port = server.bind();
  if (f.verbose) {
    std::string stops;
    for (int32_t id : stop_ids) stops += (stops.empty() ? "" : ", ") + std::to_string(id);
    std::fprintf(stderr,
                 "moex serve: model %s (%s), context %lld tokens per sequence, %d "
                 "slot%s, stop at token ids [%s]\n",
                 name.c_str(), cfg.family.c_str(), (long long)served.context, parallel,
                 parallel == 1 ? "" : "s", stops.c_str());
    if (chat) std::fprintf(stderr, "moex serve: chat template %s\n", chat->origin().c_str());
    ::moex::ops::SamplerArgs defaults;
    const std::string used = model::apply_sampling_defaults(served.generation, {}, defaults);
    if (!used.empty())
      std::fprintf(stderr, "moex serve: sampling defaults from %s: %s (requests override each)\n",
                   served.generation.source.c_str(), used.c_str());
  }
  const bool v6 = http.host.find(':') != std::string::npos;
  std::fprintf(stderr, "moex serve: listening on http://%s%s%s:%d\n", v6 ? "[" : "",
               http.host.c_str(), v6 ? "]" : "", port);
  signals.start([&] {
    scheduler.shutdown();  // cancels what runs; new requests are refused
    server.stop();         // returns once the handlers have answered
  });
  server.serve();
  signals.stop();
  scheduler.shutdown();
  engine->release_followers();
  return 0;
}

CommandSetup serve_setup = [](CLI::App& sub) -> std::function<int()> {
  auto f = std::make_shared<ServeFlags>();
  sub.footer(
      "Endpoints: POST /v1/chat/completions, POST /v1/completions, GET /v1/models, "
      "GET /health, GET /metrics (README.md, docs/serve.md).");
  sub.add_option("-m,--model", f->model,
                 "model directory (config.json, safetensors, "
                 "tokenizer.json; a chat template for /v1/chat/completions)")
      ->type_name("DIR")
      ->required();
  sub.add_option("--host", f->host, "address to listen on (default 127.0.0.1)")->type_name("ADDR");
  sub.add_option("--port", f->port, "TCP port (default 8080; 0: a free one, printed)")
      ->type_name("INT");
  sub.add_option("--parallel", f->parallel,
                 "requests decoded together, 1-256 (default: min(4, 2 x threads, what half "
                 "the available memory holds in KV caches), printed); more wait in a queue of 64")
      ->type_name("INT");
  sub.add_option("--ctx-size", f->ctx_size,
                 "KV cache capacity per request in tokens, prompt and completion (default: "
                 "max_position_embeddings, at most 4096)")
      ->type_name("INT");
  sub.add_option("--api-key", f->api_key,
                 "require 'Authorization: Bearer KEY' on every endpoint but /health")
      ->type_name("KEY");
  sub.add_flag("--health-needs-key", f->health_needs_key,
               "with --api-key: /health needs the key too (default: it answers without, for "
               "load balancers' probes)");
  sub.add_option("--cors-origin", f->cors_origins,
                 "answer browsers' CORS requests from ORIGIN (scheme://host[:port]; repeatable; "
                 "*: any origin); default: no CORS")
      ->type_name("ORIGIN");
  sub.add_option("--cache-ram", f->cache_ram,
                 "prompt cache budget in MiB: finished requests' KV (and recurrent states) kept "
                 "in RAM, least recently used out, so that a prompt repeating one's prefix "
                 "runs only the rest on any slot; 0: off (default: min(8192, a quarter of the "
                 "memory the slots' KV caches leave), printed; off with --expert-parallel)")
      ->type_name("MiB");
  sub.add_option("--batch-tokens", f->batch_tokens,
                 "prompt tokens one step runs beside every running request's next token: "
                 "chunks of the waiting prompts, oldest first, several short ones together "
                 "(default: 32 per thread, 64 to 2048)")
      ->type_name("INT");
  sub.add_option("--alias", f->alias,
                 "model name in /v1/models and responses (default: the "
                 "directory's name)")
      ->type_name("NAME");
  add_cpu_run_options(sub, &f->threads, &f->precision, &f->weights, nullptr, &f->kv_cache);
  sub.add_option("--fused", f->fused, "fused MoE decode path: auto (cap applies), on, off");
  sub.add_option("--max-dff", f->max_dff, "Dff cap of the fused path in auto mode")
      ->type_name("INT");
  add_backend_options(sub, &f->backends);
  sub.add_option("--reasoning-format", f->reasoning_format,
                 "deepseek (default): thinking in reasoning_content; none: left in the content")
      ->type_name("FORMAT");
  sub.add_option("--test-replies", f->test_replies, "test hook: answers' ids replaced")
      ->type_name("FILE")
      ->group("");  // hidden
  sub.add_flag("-v,--verbose", f->verbose,
               "print the setup and a line per request (id, tokens, time to first token, "
               "tokens/s, finish reason)");
  add_spec_options(sub, f->spec);
  add_expert_parallel_flags(sub, &f->expert_parallel);
  return [f] { return run_serve(*f); };
};

MOEX_REGISTER_COMMAND(serve, "serve", "OpenAI-compatible HTTP server (chat and completions)",
                      serve_setup);

}  // namespace
}  // namespace moex::tools
