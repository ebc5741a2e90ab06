// The Generator (processors, sampler, stop and length rules) and the single-sequence loop.
#include "generate/generator.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace moex::generate {
namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();

GenerationParams greedy(int64_t max_tokens) {
  GenerationParams p;
  p.max_tokens = max_tokens;
  return p;
}

// Greedy steps from the same logits every time; returns the tokens and ends.
std::vector<TokenId> steps(Generator& g, const std::vector<float>& logits, int n,
                           std::vector<StepEnd>* ends = nullptr) {
  std::vector<TokenId> out;
  for (int i = 0; i < n; ++i) {
    const Step s = g.next(logits.data());
    out.push_back(s.token);
    if (ends) ends->push_back(s.end);
  }
  return out;
}

TEST(Generator, WithoutProcessorsTheModelLogitsAreSampledInPlace) {
  Generator g(greedy(4), {}, 3, {});
  const std::vector<float> x = {0.f, 2.f, 1.f};
  const Step s = g.next(x.data());
  EXPECT_EQ(s.token, 1);
  EXPECT_EQ(s.logits.data(), x.data());  // no copy on the plain path
  EXPECT_EQ(s.end, StepEnd::kNone);
}

TEST(Generator, LogitBiasForcesAToken) {
  GenerationParams p = greedy(4);
  p.logits.logit_bias = {{2, 100.f}};
  Generator g(p, {}, 3, {});
  const std::vector<float> x = {0.f, 2.f, 1.f};
  const Step s = g.next(x.data());
  EXPECT_EQ(s.token, 2);
  EXPECT_NE(s.logits.data(), x.data());
  EXPECT_EQ(s.logits[2], 101.f);
  EXPECT_EQ(x[2], 1.f);  // the model's logits are not modified
}

// With a frequency penalty, greedy decoding of fixed logits alternates as the counts grow:
// 0 (3 > 2.5), 1 (3-1 < 2.5), 0 (2 > 1.5), 1 (1 < 1.5), ...
TEST(Generator, FrequencyPenaltyCountsTheTokensItGenerated) {
  GenerationParams p = greedy(8);
  p.logits.penalties.frequency = 1.0;
  Generator g(p, {}, 3, {});
  EXPECT_EQ(steps(g, {3.f, 2.5f, 0.f}, 4), (std::vector<TokenId>{0, 1, 0, 1}));
  EXPECT_EQ(g.generated(), 4);
}

TEST(Generator, RepetitionPenaltyReadsThePrompt) {
  GenerationParams p = greedy(8);
  p.logits.penalties.repetition = 2.0;
  const std::vector<TokenId> prompt = {0};
  Generator with_prompt(p, {}, 2, prompt);
  EXPECT_EQ(steps(with_prompt, {3.f, 2.f}, 1), (std::vector<TokenId>{1}));  // 3/2 < 2
  Generator without(p, {}, 2, {});
  EXPECT_EQ(steps(without, {3.f, 2.f}, 1), (std::vector<TokenId>{0}));
}

TEST(Generator, AStopIdEndsTheRequestAndIsNotCounted) {
  Generator g(greedy(4), {7, 1}, 3, {});
  const Step s = g.next(std::vector<float>{0.f, 2.f, 1.f}.data());
  EXPECT_EQ(s.token, 1);
  EXPECT_EQ(s.end, StepEnd::kStop);
  EXPECT_EQ(g.generated(), 0);
}

TEST(Generator, IgnoreEosMakesAStopIdAnOrdinaryToken) {
  GenerationParams p = greedy(2);
  p.ignore_eos = true;
  Generator g(p, {1}, 3, {});
  std::vector<StepEnd> ends;
  EXPECT_EQ(steps(g, {0.f, 2.f, 1.f}, 2, &ends), (std::vector<TokenId>{1, 1}));
  EXPECT_EQ(ends, (std::vector<StepEnd>{StepEnd::kNone, StepEnd::kLength}));
}

TEST(Generator, MinTokensMasksTheStopIdsUntilReached) {
  GenerationParams p = greedy(5);
  p.min_tokens = 2;
  Generator g(p, {1}, 3, {});
  std::vector<StepEnd> ends;
  EXPECT_EQ(steps(g, {0.f, 2.f, 1.f}, 3, &ends), (std::vector<TokenId>{2, 2, 1}));
  EXPECT_EQ(ends, (std::vector<StepEnd>{StepEnd::kNone, StepEnd::kNone, StepEnd::kStop}));
}

TEST(Generator, MaxTokensEndsOnItsLastToken) {
  Generator g(greedy(3), {}, 2, {});
  std::vector<StepEnd> ends;
  steps(g, {1.f, 0.f}, 3, &ends);
  EXPECT_EQ(ends, (std::vector<StepEnd>{StepEnd::kNone, StepEnd::kNone, StepEnd::kLength}));
}

// The constrained-decoding hook: a processor added by the caller runs after the built-ins.
class AllowOnly final : public LogitsProcessor {
 public:
  explicit AllowOnly(TokenId id) : id_(id) {}
  void apply(std::span<float> logits, const TokenHistory&) override {
    for (size_t i = 0; i < logits.size(); ++i)
      if (TokenId(i) != id_) logits[i] = -kInf;
  }
  const char* name() const override { return "allow_only"; }

 private:
  TokenId id_;
};

TEST(Generator, AnAddedProcessorRunsAfterTheBuiltIns) {
  GenerationParams p = greedy(4);
  p.logits.logit_bias = {{1, 100.f}};
  Generator g(p, {}, 3, {});
  g.add_processor(std::make_unique<AllowOnly>(2));
  EXPECT_EQ(steps(g, {0.f, 0.f, -50.f}, 1), (std::vector<TokenId>{2}));
  Generator none(greedy(4), {}, 3, {});
  none.add_processor(std::make_unique<AllowOnly>(5));  // outside the vocabulary: nothing left
  try {
    none.next(std::vector<float>{0.f, 0.f, 0.f}.data());
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("allow_only"), std::string::npos) << e.what();
  }
}

// A stateful processor: allows one token, then the next one up (a matcher that advances on
// accept), and records what it was given.
class Ladder final : public LogitsProcessor {
 public:
  explicit Ladder(std::vector<TokenId>* seen) : seen_(seen) {}
  void apply(std::span<float> logits, const TokenHistory&) override {
    for (size_t i = 0; i < logits.size(); ++i)
      if (TokenId(i) != next_) logits[i] = -kInf;
  }
  void accept(TokenId t) override {
    seen_->push_back(t);
    next_ = t + 1;
  }
  const char* name() const override { return "ladder"; }

 private:
  std::vector<TokenId>* seen_;
  TokenId next_ = 0;
};

TEST(Generator, AcceptSeesEveryOutputTokenButNotTheStopId) {
  std::vector<TokenId> seen;
  Generator g(greedy(10), /*stop_ids=*/{3}, 5, {});
  g.add_processor(std::make_unique<Ladder>(&seen));
  std::vector<StepEnd> ends;
  // Greedy would take token 4 every time; the ladder forces 0, 1, 2, then the stop id 3.
  EXPECT_EQ(steps(g, {0.f, 0.f, 0.f, 0.f, 9.f}, 4, &ends), (std::vector<TokenId>{0, 1, 2, 3}));
  EXPECT_EQ(ends.back(), StepEnd::kStop);
  EXPECT_EQ(seen, (std::vector<TokenId>{0, 1, 2}));
  EXPECT_EQ(g.generated(), 3);
}

TEST(Generator, BadArgumentsAreRefusedNamingTheField) {
  auto message = [](GenerationParams p) -> std::string {
    try {
      Generator g(p, {}, 4, {});
    } catch (const Error& e) {
      return e.what();
    }
    return "accepted";
  };
  GenerationParams p = greedy(0);
  EXPECT_NE(message(p).find("max_tokens"), std::string::npos);
  p = greedy(3);
  p.min_tokens = 4;
  EXPECT_NE(message(p).find("min_tokens"), std::string::npos);
  p = greedy(3);
  p.sampling.temperature = -1;
  EXPECT_NE(message(p).find("temp"), std::string::npos);
  p = greedy(3);
  p.logits.logit_bias = {{4, 1.f}};
  EXPECT_NE(message(p).find("logit_bias"), std::string::npos);
}

// run_sequence over a scripted model: each decode returns the logits of the next row.
struct ScriptedModel {
  explicit ScriptedModel(std::vector<std::vector<float>> r) : rows(std::move(r)) {}
  std::vector<std::vector<float>> rows;  // rows[i]: logits after i decode steps
  int64_t position = 0, context = 100;
  std::vector<TokenId> decoded;
  SequenceDriver driver() {
    return {.decode = [this](TokenId t) {
              decoded.push_back(t);
              ++position;
              return rows[size_t(position)].data();
            },
            .context_full = [this] { return position >= context; },
            .on_step = {}};
  }
};

TEST(RunSequence, StopsAtTheStopIdAndSeesItsStep) {
  ScriptedModel m({{0.f, 1.f, 0.f}, {0.f, 0.f, 1.f}, {5.f, 0.f, 0.f}});
  Generator g(greedy(10), {0}, 3, {});
  std::vector<TokenId> seen;
  SequenceDriver d = m.driver();
  d.on_step = [&](const Step& s, const float* model_logits) {
    seen.push_back(s.token);
    EXPECT_EQ(model_logits, m.rows[size_t(m.position)].data());
    return true;
  };
  const RunResult r = run_sequence(g, m.rows[0].data(), d);
  EXPECT_EQ(r.end, RunEnd::kStop);
  EXPECT_EQ(seen, (std::vector<TokenId>{1, 2, 0}));
  EXPECT_EQ(m.decoded, (std::vector<TokenId>{1, 2}));
  EXPECT_EQ(r.decode_steps, 2);
}

TEST(RunSequence, LengthContextAndInterruptEndIt) {
  const std::vector<std::vector<float>> rows(10, std::vector<float>{0.f, 1.f});
  {
    ScriptedModel m(rows);
    Generator g(greedy(3), {}, 2, {});
    const RunResult r = run_sequence(g, m.rows[0].data(), m.driver());
    EXPECT_EQ(r.end, RunEnd::kLength);
    EXPECT_EQ(r.decode_steps, 2);  // the last token is not run
  }
  {
    ScriptedModel m(rows);
    m.context = 2;
    Generator g(greedy(9), {}, 2, {});
    const RunResult r = run_sequence(g, m.rows[0].data(), m.driver());
    EXPECT_EQ(r.end, RunEnd::kContext);
    EXPECT_EQ(r.decode_steps, 2);
  }
  {
    ScriptedModel m(rows);
    Generator g(greedy(9), {}, 2, {});
    SequenceDriver d = m.driver();
    int calls = 0;
    d.on_step = [&](const Step&, const float*) { return ++calls < 2; };
    const RunResult r = run_sequence(g, m.rows[0].data(), d);
    EXPECT_EQ(r.end, RunEnd::kInterrupted);
    EXPECT_EQ(calls, 2);
    EXPECT_EQ(r.decode_steps, 1);
  }
}

}  // namespace
}  // namespace moex::generate
