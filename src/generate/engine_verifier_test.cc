// Speculative decoding on the engine, every family's tiny model: the tokens of plain greedy
// decoding whatever the drafts (all right, some wrong, prompt lookup), the sequence left at
// the same position, and the logits of every step equal to plain decoding's bit for bit.
#include "generate/engine_verifier.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "model/engine/engine_test_util.h"

namespace moex::generate {
namespace {

namespace eng = model::engine;

struct Trace {
  std::vector<TokenId> tokens;
  std::vector<std::vector<float>> logits;  // the model's, per step
  int64_t position = 0;
  SpecStats stats;
  int64_t reruns = 0;
};

GenerationParams params_of(int64_t n, double temperature) {
  GenerationParams p;
  p.max_tokens = n;
  p.ignore_eos = true;
  p.sampling.temperature = temperature;
  p.sampling.seed = 5;
  return p;
}

Trace plain(eng::Engine& e, const std::vector<TokenId>& prompt, const GenerationParams& p) {
  e.reset();
  Trace t;
  Generator g(p, {}, e.vocab(), prompt);
  SequenceDriver d;
  d.decode = [&](TokenId x) { return e.decode(x); };
  d.context_full = [&] { return e.position() >= e.context(); };
  d.on_step = [&](const Step& s, const float* l) {
    t.tokens.push_back(s.token);
    t.logits.emplace_back(l, l + e.vocab());
    return true;
  };
  run_sequence(g, e.prefill(prompt), d);
  t.position = e.position();
  return t;
}

struct Script final : Drafter {
  std::vector<TokenId> want;
  size_t prompt = 0;
  int64_t wrong = 0;  // every wrong-th draft is off by one (0: none)
  int64_t vocab = 1;
  std::vector<TokenId> propose(std::span<const TokenId> h, int64_t k) override {
    std::vector<TokenId> out;
    for (size_t i = h.size() - prompt; i < want.size() && int64_t(out.size()) < k; ++i) {
      const bool bad = wrong > 0 && i % size_t(wrong) == 0;
      out.push_back(bad ? TokenId((want[i] + 1) % vocab) : want[i]);
    }
    return out;
  }
};

Trace speculative(eng::Engine& e, const std::vector<TokenId>& prompt, const GenerationParams& p,
                  Drafter& drafter, int64_t k) {
  e.reset();
  Trace t;
  Generator g(p, {}, e.vocab(), prompt);
  EngineVerifier v(e, e.sequence());
  SpecDriver d = v.driver();
  d.on_step = [&](const Step& s, const float* l) {
    t.tokens.push_back(s.token);
    t.logits.emplace_back(l, l + e.vocab());
    return true;
  };
  t.stats = run_speculative(g, e.prefill(prompt), prompt, drafter, k, e.vocab(), d).stats;
  t.position = e.position();
  t.reruns = v.reruns();
  return t;
}

double max_abs_diff(const Trace& a, const Trace& b, int64_t* unequal_rows) {
  double m = 0;
  *unequal_rows = 0;
  for (size_t i = 0; i < std::min(a.logits.size(), b.logits.size()); ++i) {
    if (!eng::test::bit_equal(a.logits[i], b.logits[i])) ++*unequal_rows;
    for (size_t j = 0; j < a.logits[i].size(); ++j)
      m = std::max(m, double(std::fabs(a.logits[i][j] - b.logits[i][j])));
  }
  return m;
}

class SpecFamilies : public ::testing::TestWithParam<const char*> {};

TEST_P(SpecFamilies, OutputIsPlainDecodings) {
  auto e = eng::Engine::open(eng::test::shared_tiny_family(GetParam()),
                             eng::test::options_for_fused("auto"));
  const int64_t V = e->vocab(), n = 24;
  std::vector<TokenId> prompt;
  for (int i = 0; i < 14; ++i) prompt.push_back(TokenId((i % 5) * 7 % V));
  for (double temperature : {0.0, 1.0}) {
    const GenerationParams p = params_of(n, temperature);
    const Trace want = plain(*e, prompt, p);
    ASSERT_EQ(int64_t(want.tokens.size()), n);
    for (int64_t wrong : {0, 4, -1}) {
      for (int64_t k : {2, 5}) {
        Script script;
        script.want = want.tokens;
        script.prompt = prompt.size();
        script.wrong = wrong;
        script.vocab = V;
        NgramDrafter lookup({1, 3});
        Drafter& d = wrong < 0 ? static_cast<Drafter&>(lookup) : script;
        const Trace got = speculative(*e, prompt, p, d, k);
        const std::string what = std::string(GetParam()) + " T " + std::to_string(temperature) +
                                 " wrong " + std::to_string(wrong) + " k " + std::to_string(k);
        int64_t unequal = 0;
        const double diff = max_abs_diff(want, got, &unequal);
        // Each row of a pass computes its token on its own (engine.h: forward_every_row), so
        // the logits are plain decoding's bit for bit, not only the tokens.
        EXPECT_EQ(unequal, 0) << what << ": logits max |diff| " << diff;
        EXPECT_EQ(got.tokens, want.tokens) << what;
        EXPECT_EQ(got.position, want.position) << what;
        if (wrong == 0) {
          EXPECT_EQ(got.stats.accepted, got.stats.drafted) << what;
        }
        if (wrong == 4) {
          EXPECT_LT(got.stats.accepted, got.stats.drafted) << what;
        }
        if (wrong == 4 && !e->can_truncate()) {
          EXPECT_GT(got.reruns, 0) << what;
        }
        if (e->can_truncate()) {
          EXPECT_EQ(got.reruns, 0) << what;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Families, SpecFamilies, eng::test::tiny_families());

}  // namespace
}  // namespace moex::generate
