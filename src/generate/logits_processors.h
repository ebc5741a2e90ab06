// The per-request chain that turns a model's logits into the ones a token is drawn from: the
// stop-id mask until min_tokens, logit bias, and the repetition, frequency and presence
// penalties, then any processors a request adds (the hook a constrained-decoding mask uses).
// Definitions follow OpenAI's API and vLLM (docs/generation.md has the formulas and order).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace moex::generate {

using TokenId = int32_t;  // the one token id type of generation (prompts, stop ids, output)

// What a processor may read: the prompt's ids (sorted, unique) and the count of each
// generated id so far.
class TokenHistory {
 public:
  TokenHistory() = default;
  explicit TokenHistory(std::span<const TokenId> prompt);
  void add_output(TokenId id);

  const std::vector<TokenId>& prompt_ids() const { return prompt_; }  // sorted, unique
  const std::unordered_map<TokenId, int32_t>& output_counts() const { return counts_; }
  int64_t output_tokens() const { return outputs_; }

 private:
  std::vector<TokenId> prompt_;
  std::unordered_map<TokenId, int32_t> counts_;
  int64_t outputs_ = 0;
};

// One step of the chain: changes logits[vocab] in place. A processor that removes a token
// sets its logit to -inf; none may produce NaN or +inf.
class LogitsProcessor {
 public:
  virtual ~LogitsProcessor() = default;
  virtual void apply(std::span<float> logits, const TokenHistory& history) = 0;
  // Called by Generator with the token drawn from the processed logits, when it is output
  // (not for a stop id that ends the request): a stateful processor (a grammar matcher)
  // advances here. Throws moex::Error when the token cannot be taken.
  virtual void accept(TokenId token) {}
  virtual const char* name() const = 0;
};

struct PenaltyArgs {
  // vLLM's repetition_penalty (the CTRL paper's): a logit of a token seen in the prompt or the
  // output is divided by it when positive, multiplied when not. 1: off; in [0.01, 100].
  double repetition = 1.0;
  // OpenAI's: logit -= frequency * count(output) + presence * [count(output) > 0]. 0: off;
  // each in [-2, 2].
  double frequency = 0.0;
  double presence = 0.0;
  bool active() const { return repetition != 1.0 || frequency != 0.0 || presence != 0.0; }
};

inline constexpr double kMaxLogitBias = 100.0;  // |bias| bound, as OpenAI's API takes it
// vLLM takes any repetition penalty > 0; a bound keeps a logit divided by it finite (values
// used in practice lie in 1-2).
inline constexpr double kMinRepetitionPenalty = 0.01, kMaxRepetitionPenalty = 100.0;

struct LogitsArgs {
  std::vector<std::pair<TokenId, float>> logit_bias;  // added to the token's logit
  PenaltyArgs penalties;
};

// Throws moex::Error naming the field ("logit_bias", "repetition_penalty", ...) for a value
// out of range: a bias id outside [0, vocab), a bias outside [-100, 100] or not finite, a
// penalty outside its range or not finite.
void validate_logits_args(const LogitsArgs& args, int64_t vocab);

// The built-in processors, exposed for tests; Generator builds the chain from its arguments.
class StopIdMask final : public LogitsProcessor {
 public:
  // Masks `stop_ids` (ids outside the vocabulary ignored) while fewer than min_tokens tokens
  // have been generated.
  StopIdMask(std::vector<TokenId> stop_ids, int64_t min_tokens);
  void apply(std::span<float> logits, const TokenHistory& history) override;
  const char* name() const override { return "stop_id_mask"; }

 private:
  std::vector<TokenId> stop_ids_;
  int64_t min_tokens_;
};

class LogitBias final : public LogitsProcessor {
 public:
  explicit LogitBias(std::vector<std::pair<TokenId, float>> bias);  // a repeated id adds up
  void apply(std::span<float> logits, const TokenHistory& history) override;
  const char* name() const override { return "logit_bias"; }

 private:
  std::vector<std::pair<TokenId, float>> bias_;
};

class Penalties final : public LogitsProcessor {
 public:
  explicit Penalties(PenaltyArgs args);
  void apply(std::span<float> logits, const TokenHistory& history) override;
  const char* name() const override { return "penalties"; }

 private:
  PenaltyArgs args_;
  std::vector<TokenId> seen_;  // scratch: prompt and output ids, merged
};

}  // namespace moex::generate
