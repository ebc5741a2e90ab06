// Generator and run_sequence (see generator.h).
#include "generate/generator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "core/error.h"

namespace moex::generate {

void Generator::validate(const GenerationParams& p, int64_t vocab) {
  ::moex::ops::Sampler check(p.sampling);  // throws naming the sampling field
  validate_logits_args(p.logits, vocab);
  if (p.max_tokens < 1) fail("max_tokens: expected at least 1, got ", p.max_tokens);
  if (p.min_tokens < 0 || p.min_tokens > p.max_tokens)
    fail("min_tokens: expected 0..", p.max_tokens, " (max_tokens), got ", p.min_tokens);
}

Generator::Generator(const GenerationParams& params, std::vector<TokenId> stop_ids,
                     int64_t vocab, std::span<const TokenId> prompt)
    : params_(params),
      stop_ids_(std::move(stop_ids)),
      vocab_(vocab),
      sampler_((validate(params, vocab), params.sampling)) {
  if (vocab_ < 1) fail("generator: the vocabulary is empty");
  const PenaltyArgs& pen = params_.logits.penalties;
  // The prompt is kept only where a processor reads it.
  if (pen.repetition != 1.0) history_ = TokenHistory(prompt);
  if (params_.min_tokens > 0 && !params_.ignore_eos && !stop_ids_.empty())
    chain_.push_back(std::make_unique<StopIdMask>(stop_ids_, params_.min_tokens));
  if (!params_.logits.logit_bias.empty())
    chain_.push_back(std::make_unique<LogitBias>(params_.logits.logit_bias));
  if (pen.active()) chain_.push_back(std::make_unique<Penalties>(pen));
}

void Generator::add_processor(std::unique_ptr<LogitsProcessor> p) { chain_.push_back(std::move(p)); }

bool Generator::is_stop_id(TokenId id) const {
  return std::find(stop_ids_.begin(), stop_ids_.end(), id) != stop_ids_.end();
}

Step Generator::next(const float* logits) {
  Step s;
  const float* from = logits;
  if (!chain_.empty()) {
    work_.assign(logits, logits + vocab_);
    for (auto& p : chain_) p->apply(std::span<float>(work_), history_);
    const float mx = *std::max_element(work_.begin(), work_.end());
    if (mx == -std::numeric_limits<float>::infinity())
      fail("generation: the logits processors removed every token (last: ",
           chain_.back()->name(), ")");
    from = work_.data();
  }
  s.logits = std::span<const float>(from, size_t(vocab_));
  s.token = TokenId(sampler_.sample(from, vocab_));
  if (!params_.ignore_eos && is_stop_id(s.token)) {
    s.end = StepEnd::kStop;
    return s;
  }
  for (auto& p : chain_) p->accept(s.token);
  history_.add_output(s.token);
  if (history_.output_tokens() >= params_.max_tokens) s.end = StepEnd::kLength;
  return s;
}

const char* run_end_name(RunEnd e) {
  switch (e) {
    case RunEnd::kStop: return "stop";
    case RunEnd::kLength: return "length";
    case RunEnd::kContext: return "context";
    case RunEnd::kInterrupted: return "interrupted";
  }
  return "";
}

std::optional<RunEnd> end_after(const Step& s, bool go_on) {
  if (s.end == StepEnd::kStop) return RunEnd::kStop;
  if (s.end == StepEnd::kLength) return RunEnd::kLength;
  if (!go_on) return RunEnd::kInterrupted;
  return std::nullopt;
}

RunResult run_sequence(Generator& gen, const float* logits, const SequenceDriver& d) {
  RunResult r;
  for (;;) {
    const Step s = gen.next(logits);
    const bool go_on = !d.on_step || d.on_step(s, logits);
    if (const std::optional<RunEnd> end = end_after(s, go_on)) {
      r.end = *end;
      return r;
    }
    if (d.context_full()) {
      r.end = RunEnd::kContext;
      return r;
    }
    logits = d.decode(s.token);
    ++r.decode_steps;
  }
}

}  // namespace moex::generate
