// The built-in logits processors (see logits_processors.h). Arithmetic is in float, one
// operation per statement, in the order vLLM applies it, so a float32 reference in Python
// reproduces it bit for bit (this file is built without FMA contraction: no -mfma).
#include "generate/logits_processors.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace moex::generate {

TokenHistory::TokenHistory(std::span<const TokenId> prompt) : prompt_(prompt.begin(), prompt.end()) {
  std::sort(prompt_.begin(), prompt_.end());
  prompt_.erase(std::unique(prompt_.begin(), prompt_.end()), prompt_.end());
}

void TokenHistory::add_output(TokenId id) {
  ++counts_[id];
  ++outputs_;
}

void validate_logits_args(const LogitsArgs& a, int64_t vocab) {
  for (const auto& [id, bias] : a.logit_bias) {
    if (id < 0 || id >= vocab)
      fail("logit_bias: token id ", id, " is outside the vocabulary [0, ", vocab, ")");
    if (!std::isfinite(bias) || std::fabs(bias) > kMaxLogitBias)
      fail("logit_bias: the bias of token ", id, " must be in [-", kMaxLogitBias, ", ",
           kMaxLogitBias, "], got ", bias);
  }
  const PenaltyArgs& p = a.penalties;
  if (!(p.repetition >= kMinRepetitionPenalty && p.repetition <= kMaxRepetitionPenalty))
    fail("repetition_penalty: expected a value in [", kMinRepetitionPenalty, ", ",
         kMaxRepetitionPenalty, "] (1 is off), got ", p.repetition);
  if (!std::isfinite(p.frequency) || std::fabs(p.frequency) > 2)
    fail("frequency_penalty: expected a value in [-2, 2], got ", p.frequency);
  if (!std::isfinite(p.presence) || std::fabs(p.presence) > 2)
    fail("presence_penalty: expected a value in [-2, 2], got ", p.presence);
}

StopIdMask::StopIdMask(std::vector<TokenId> stop_ids, int64_t min_tokens)
    : stop_ids_(std::move(stop_ids)), min_tokens_(min_tokens) {}

void StopIdMask::apply(std::span<float> logits, const TokenHistory& h) {
  if (h.output_tokens() >= min_tokens_) return;
  const int64_t v = int64_t(logits.size());
  for (TokenId id : stop_ids_)
    if (id >= 0 && id < v) logits[size_t(id)] = -std::numeric_limits<float>::infinity();
}

LogitBias::LogitBias(std::vector<std::pair<TokenId, float>> bias) : bias_(std::move(bias)) {}

void LogitBias::apply(std::span<float> logits, const TokenHistory&) {
  const int64_t v = int64_t(logits.size());
  for (const auto& [id, b] : bias_)
    if (id >= 0 && id < v) logits[size_t(id)] = logits[size_t(id)] + b;
}

Penalties::Penalties(PenaltyArgs args) : args_(args) {}

void Penalties::apply(std::span<float> logits, const TokenHistory& h) {
  const int64_t v = int64_t(logits.size());
  auto in_vocab = [v](TokenId id) { return id >= 0 && id < v; };
  if (args_.repetition != 1.0) {
    // Every id of the prompt or the output once, whatever its count.
    seen_.assign(h.prompt_ids().begin(), h.prompt_ids().end());
    for (const auto& [id, n] : h.output_counts())
      if (!std::binary_search(h.prompt_ids().begin(), h.prompt_ids().end(), id))
        seen_.push_back(id);
    const float r = float(args_.repetition);
    for (TokenId id : seen_) {
      if (!in_vocab(id)) continue;
      float& x = logits[size_t(id)];
      x = x > 0 ? x / r : x * r;
    }
  }
  if (args_.frequency != 0.0 || args_.presence != 0.0) {
    const float f = float(args_.frequency), p = float(args_.presence);
    for (const auto& [id, n] : h.output_counts()) {
      if (!in_vocab(id) || n <= 0) continue;
      float& x = logits[size_t(id)];
      const float by_count = f * float(n);
      x = x - by_count;
      x = x - p;
    }
  }
}

}  // namespace moex::generate
