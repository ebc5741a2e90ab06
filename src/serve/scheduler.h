// The server's decode loop: up to `parallel` sequences (slots) decode together on one engine,
// each with its own KV cache (a model::engine::Sequence) and Generator (the logits processors
// and the sampler, generate/generator.h). A request waits in a
// bounded queue until a slot is free, joins at the next step, and leaves when it stops. Each
// step is one pass through the model (Engine::forward_batch) of the next token of every
// decoding slot plus prompt chunks of the slots still prefilling, oldest first, up to a token
// prompt-token budget (--batch-tokens): short prompts prefill together, and running streams
// keep decoding while they do. The MoE layers group the step's rows by expert and read each
// selected expert once per step; attention runs per sequence. A sequence's tokens do not
// depend on what it was batched with.
//
// With speculative decoding (SchedulerOptions::spec, docs/speculative.md) a decoding slot's
// part of the step is its next token followed by drafts looked up in its own prompt and
// output, with the logits of every row; the slot's Generator steps through the rows as through
// decode steps while its tokens equal the drafts, and the sequence keeps what was output. The
// tokens and logits are those of plain decoding.
//
// Threads: one scheduler thread owns the engine. submit() and the RequestStream methods are
// safe from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "generate/generator.h"
#include "generate/grammar.h"
#include "model/engine/engine.h"
#include "serve/prompt_cache.h"
#include "serve/spec_pass.h"

namespace moex::serve {

struct GenerationRequest {
  std::vector<int32_t> prompt;  // token ids, at least one
  // Sampling, logit bias and penalties, max_tokens (>= 1, a stop token not counted), and
  // vLLM's min_tokens and ignore_eos: the request's Generator (generate/generator.h).
  generate::GenerationParams params;
  // When logprobs: every token carries its log-probability (log-softmax of the logits it was
  // drawn from: the model's after the logits processors, before temperature) and the
  // top_logprobs (0..kMaxTopLogprobs) most likely alternatives.
  bool logprobs = false;
  int top_logprobs = 0;
  // Structured output: the compiled grammar whose mask the request's Generator applies after
  // the built-in processors (null: unconstrained). serve/structured_output.h makes it.
  std::shared_ptr<const generate::Grammar> grammar;
};
inline constexpr int kMaxTopLogprobs = 20;

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0;
};

struct GeneratedToken {
  int32_t id = 0;
  float logprob = 0;               // when the request asked for logprobs
  std::vector<TokenLogprob> top;   // most likely first, top_logprobs entries
  std::chrono::steady_clock::time_point at;  // when it was sampled (RequestStream::push)
};

enum class Finish {
  kNone,       // still running
  kStop,       // a stop token (end of turn) was sampled; it is not delivered
  kLength,     // max_tokens generated
  kContext,    // the sequence filled the context
  kCancelled,  // RequestStream::cancel() or shutdown
  kError,      // Event::error says what
};
const char* finish_name(Finish f);  // "stop", "length", "length", "cancelled", "error"

// One request's output, read by the thread that submitted it.
class RequestStream {
 public:
  struct Event {
    std::vector<GeneratedToken> tokens;  // new since the last event, in order
    Finish finish = Finish::kNone;       // set on the last event
    std::string error;                   // when finish == kError
    int64_t prompt_tokens = 0;           // set once the prompt ran
    int64_t cached_tokens = 0;           // prompt tokens not run: the slot's or the prompt cache's
  };
  // Waits up to `timeout` for new tokens or the finish; false when nothing came. After the
  // event with finish != kNone, next() returns that finish again at once.
  bool next(Event& out, std::chrono::milliseconds timeout);
  // Stops generating (client gone, a stop string matched): the slot is freed at the next
  // step and a kCancelled finish follows unless the request finished first.
  void cancel();
  bool cancelled() const;

  // Scheduler side.
  void push(GeneratedToken t);
  void set_prompt(int64_t prompt_tokens, int64_t cached_tokens);
  void finish(Finish f, std::string error = {});

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<GeneratedToken> pending_;
  Finish finish_ = Finish::kNone;
  std::string error_;
  int64_t prompt_tokens_ = 0, cached_tokens_ = 0;
  bool cancelled_ = false;
};

struct SchedulerOptions {
  int parallel = 1;         // slots decoding together (--parallel), 1..kMaxParallel
  int64_t queue_limit = 64; // requests waiting for a slot beyond which submit() refuses
  std::vector<int32_t> stop_ids;  // end-of-sequence ids (model/generation_config.h)
  // The prompt cache's budget in bytes (--cache-ram; 0: none) and its index block in tokens.
  // Finished sequences are saved there and a request loads the longest cached prefix of its
  // prompt when it beats its slot's own (serve/prompt_cache.h).
  int64_t prompt_cache_bytes = 0;
  int64_t prompt_cache_block = PromptCache::kDefaultBlock;
  // The most prompt tokens one step runs beside the decode tokens (--batch-tokens): chunks of
  // the waiting prompts, oldest first. Every decoding slot's next token runs at each step
  // whatever the budget. 0: default_batch_tokens(num_threads()).
  int64_t batch_tokens = 0;
  SpecOptions spec;  // --spec ngram / mtp and its settings
  // Tests: with --spec mtp, sees each first draft's module logits [vocab] of a slot, with the
  // ids its sequence holds and the token it runs next (`history`) and the module's row
  // (history.size() - 2). Called on the scheduler's thread.
  std::function<void(const std::vector<int32_t>& history, int64_t row, const float* logits)>
      on_mtp_draft;
};
inline constexpr int kMaxParallel = 256;
inline constexpr int64_t kMaxBatchTokens = 1 << 16;
// The default prompt-token budget per step: 32 per worker thread, 64 to 2048. A CPU step is
// compute-bound past ~16 tokens per thread (prefill 290-360 tokens/s at 32..512 tokens on the
// 4-layer qwen3-30b-a3b shape, 2 threads), so bigger steps only hold back the first tokens of
// the prompts that would have finished first (docs/serve.md, "Steps"); the arithmetic a step
// can absorb grows with the threads.
int64_t default_batch_tokens(int threads);

struct SchedulerStats {
  int64_t steps = 0;          // decode steps run
  int64_t decoded_rows = 0;   // tokens decoded over all steps (sum of batch sizes, drafts included)
  int64_t prefill_tokens = 0; // prompt tokens run (reused ones not counted)
  int64_t cached_tokens = 0;  // prompt tokens reused: a slot's own or the prompt cache's
  // Speculative decoding: draft tokens run, those output as drafted (vLLM's "num_draft_tokens"
  // and "num_accepted_tokens"), and passes run again to rewind recurrent states.
  int64_t spec_drafted = 0, spec_accepted = 0, spec_reruns = 0;
  PromptCacheStats prompt_cache;
  int64_t completed = 0, cancelled = 0, rejected = 0;
  int active = 0, queued = 0;
};

class Scheduler {
 public:
  // The engine stays owned by the caller and must outlive the scheduler; only the scheduler
  // thread touches it from here on. Throws moex::Error for options out of range.
  Scheduler(model::engine::Engine& engine, SchedulerOptions options);
  ~Scheduler();  // shutdown()

  struct Submitted {
    std::shared_ptr<RequestStream> stream;  // null when refused
    std::string refusal;                    // why (queue full, shutting down)
    bool queue_full = false;                // the refusal is the queue bound (HTTP 503)
  };
  // Queues a request. Throws moex::Error for a request the model cannot run (no prompt
  // tokens, an id outside the vocabulary, a prompt that leaves no room in the context,
  // top_logprobs outside 0..kMaxTopLogprobs, generation parameters Generator refuses): the
  // message names the field.
  Submitted submit(GenerationRequest request);
  // Cancels every queued and running request and stops the thread; idempotent.
  void shutdown();
  SchedulerStats stats() const;

 private:
  struct Slot;
  struct Pending {
    GenerationRequest request;
    std::shared_ptr<RequestStream> stream;
  };
  void run();
  void admit_locked();  // queued requests into free slots
  void step();  // at most one prefill chunk, then one decode step over the decoding slots
  // The slot's request is over: its client is told, its sequence saved to the prompt cache
  // (unless it failed), the slot freed.
  void finish(Slot& s, Finish f, const std::string& error = {});
  // The engine failed on s's sequence: it is emptied (its state is not trusted) and the
  // request ends in `error`.
  void fail_slot(Slot& s, const std::string& error);
  int active_slots() const;  // slots holding a request

  model::engine::Engine& engine_;
  SchedulerOptions opt_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::unique_ptr<PromptCache> cache_;  // null: --cache-ram 0
  std::unique_ptr<generate::Drafter> drafter_;  // null: no speculative decoding
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;
  bool stopping_ = false;
  SchedulerStats stats_;
  int64_t admissions_ = 0;  // admission order of slots (the oldest prefills first)
  int64_t batch_tokens_ = 0;  // opt_.batch_tokens resolved
  std::thread thread_;
};

}  // namespace moex::serve
