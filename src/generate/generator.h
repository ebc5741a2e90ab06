// The generation seam: one Generator per request turns each step's logits into the next
// token (the logits processors, then the sampler) and says when the request ends (a stop
// id, max_tokens). `moex generate`, `moex chat` and the serve scheduler all drive one;
// run_sequence is the decode loop of the single-sequence commands.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <memory>
#include <span>
#include <vector>

#include "generate/logits_processors.h"
#include "backend/cpu/sampling.h"

namespace moex::generate {

struct GenerationParams {
  ::moex::ops::SamplerArgs sampling;
  LogitsArgs logits;          // logit bias and penalties
  int64_t max_tokens = 1;     // >= 1: output tokens at most (a stop token is not counted)
  int64_t min_tokens = 0;     // vLLM's: the stop ids cannot be sampled before this many
  bool ignore_eos = false;    // vLLM's: a sampled stop id is an ordinary output token
};

enum class StepEnd {
  kNone,    // the token is output; generation goes on
  kStop,    // the token is a stop id: the request ends and the token is not output
  kLength,  // the token is output and it is the max_tokens-th: the request ends
};

struct Step {
  TokenId token = 0;
  StepEnd end = StepEnd::kNone;
  // The logits the token was drawn from (after every processor, before temperature): the
  // caller's own array when no processor is active, else the generator's copy. Valid until
  // the next call of next().
  std::span<const float> logits;
};

class Generator {
 public:
  // Throws moex::Error naming the field for arguments out of range (the sampler's, logit
  // bias and penalties, max_tokens < 1, min_tokens outside [0, max_tokens]).
  Generator(const GenerationParams& params, std::vector<TokenId> stop_ids, int64_t vocab,
            std::span<const TokenId> prompt);
  static void validate(const GenerationParams& params, int64_t vocab);

  // Adds a processor run after the built-in ones (a constrained-decoding mask, say); every
  // processor's accept() sees each output token.
  void add_processor(std::unique_ptr<LogitsProcessor> p);
  // One step from logits[vocab] (not modified). Throws moex::Error when the processed logits
  // hold NaN or +inf, or when every token was removed.
  Step next(const float* logits);

  int64_t generated() const { return history_.output_tokens(); }  // output tokens so far
  bool is_stop_id(TokenId id) const;
  const GenerationParams& params() const { return params_; }

 private:
  GenerationParams params_;
  std::vector<TokenId> stop_ids_;
  int64_t vocab_;
  TokenHistory history_;
  ::moex::ops::Sampler sampler_;
  std::vector<std::unique_ptr<LogitsProcessor>> chain_;
  std::vector<float> work_;
};

// The single-sequence decode loop (generate, chat).
enum class RunEnd { kStop, kLength, kContext, kInterrupted };
const char* run_end_name(RunEnd e);  // "stop", "length", "context", "interrupted"
// How a run ends after step s, if it does: the step's stop or length, else an interrupt when
// the caller's on_step said stop (go_on false); nullopt: it goes on.
std::optional<RunEnd> end_after(const Step& s, bool go_on);

struct SequenceDriver {
  // Runs `token` through the model and returns the next logits.
  std::function<const float*(TokenId token)> decode;
  // True when the sequence has no room for another token.
  std::function<bool()> context_full;
  // Sees every step, the stop token's included, with the model's logits of that step; false
  // stops generation after this token (Ctrl-C). May be empty.
  std::function<bool(const Step& step, const float* model_logits)> on_step;
};

struct RunResult {
  RunEnd end = RunEnd::kLength;
  int64_t decode_steps = 0;  // decode() calls
};

// Steps `gen` from `logits` (the prompt's last) until it ends, the context fills or on_step
// says stop. Errors of decode() and Generator::next propagate.
RunResult run_sequence(Generator& gen, const float* logits, const SequenceDriver& driver);

}  // namespace moex::generate
