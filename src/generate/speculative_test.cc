// run_speculative against run_sequence on a fake model whose logits are a fixed function of
// every token before: the same tokens, ends and processor effects at temperature 0 and, with
// the same seed, at temperature 1; and the output distribution against the exact one.
#include "generate/speculative.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "generate/forced_draft.h"

namespace moex::generate {
namespace {

// Logits of the next token after `seq`, a hash of its last three tokens and its length
// (every prefix gives its own row, as a model's would), scaled by `scale`.
void fake_logits(const std::vector<TokenId>& seq, int64_t vocab, float scale, float* out) {
  uint64_t h = 1469598103934665603ull ^ seq.size();
  for (size_t i = seq.size() >= 3 ? seq.size() - 3 : 0; i < seq.size(); ++i)
    h = (h ^ uint64_t(seq[i] + 1)) * 1099511628211ull;
  for (int64_t v = 0; v < vocab; ++v) {
    uint64_t x = (h ^ uint64_t(v) * 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    out[v] = scale * float(double(x % 10007) / 10007.0);
  }
}

// A sequence of the fake model: what it ran, its capacity and the logits of its last call.
struct FakeModel {
  int64_t vocab = 16, capacity = 1 << 20;
  float scale = 3.f;
  std::vector<TokenId> seq;
  std::vector<float> rows;
  int64_t passes = 0;

  const float* run(const TokenId* t, int64_t n) {
    if (int64_t(seq.size()) + n > capacity) throw Error("fake model: past its context");
    rows.assign(size_t(n * vocab), 0.f);
    for (int64_t i = 0; i < n; ++i) {
      seq.push_back(t[i]);
      fake_logits(seq, vocab, scale, rows.data() + i * vocab);
    }
    ++passes;
    return rows.data();
  }
};

struct Outcome {
  std::vector<TokenId> tokens;
  RunEnd end = RunEnd::kLength;
  std::vector<TokenId> sequence;  // what the model holds at the end
  SpecStats stats;
};

Outcome plain(const GenerationParams& p, std::vector<TokenId> stops,
              const std::vector<TokenId>& prompt, FakeModel m, int64_t stop_after = -1) {
  Generator g(p, stops, m.vocab, prompt);
  Outcome r;
  const float* first =
      m.run(prompt.data(), int64_t(prompt.size())) + (prompt.size() - 1) * size_t(m.vocab);
  SequenceDriver d;
  d.decode = [&](TokenId t) { return m.run(&t, 1); };
  d.context_full = [&] { return int64_t(m.seq.size()) >= m.capacity; };
  d.on_step = [&](const Step& s, const float*) {
    r.tokens.push_back(s.token);
    return int64_t(r.tokens.size()) != stop_after;
  };
  r.end = run_sequence(g, first, d).end;
  r.sequence = m.seq;
  return r;
}

// A drafter of fixed guesses: the plain run's continuation with every `wrong`-th token
// replaced (0: never), at most k of them from where the output stands.
struct ScriptDrafter final : Drafter {
  std::vector<TokenId> script;
  size_t prompt = 0;
  int64_t wrong = 0, vocab = 16;
  std::vector<TokenId> propose(std::span<const TokenId> h, int64_t k) override {
    std::vector<TokenId> out;
    for (size_t i = h.size() - prompt; i < script.size() && int64_t(out.size()) < k; ++i) {
      const bool bad = wrong > 0 && (i % size_t(wrong)) == size_t(wrong - 1);
      out.push_back(bad ? TokenId((script[i] + 1) % vocab) : script[i]);
    }
    return out;
  }
};

Outcome speculative(const GenerationParams& p, std::vector<TokenId> stops,
                    const std::vector<TokenId>& prompt, FakeModel m, Drafter& drafter, int64_t k,
                    int64_t stop_after = -1) {
  Generator g(p, stops, m.vocab, prompt);
  Outcome r;
  const float* first =
      m.run(prompt.data(), int64_t(prompt.size())) + (prompt.size() - 1) * size_t(m.vocab);
  SpecDriver d;
  d.verify = [&](const TokenId* t, int64_t n) { return m.run(t, n); };
  d.keep = [&](const TokenId* t, int64_t n, int64_t kept) {
    ASSERT_GE(kept, 1);
    ASSERT_LT(kept, n);
    ASSERT_EQ(m.seq.back(), t[n - 1]);
    m.seq.resize(m.seq.size() - size_t(n - kept));
  };
  d.room = [&] { return m.capacity - int64_t(m.seq.size()); };
  d.on_step = [&](const Step& s, const float*) {
    r.tokens.push_back(s.token);
    return int64_t(r.tokens.size()) != stop_after;
  };
  const SpecResult res = run_speculative(g, first, prompt, drafter, k, m.vocab, d);
  r.end = res.end;
  r.stats = res.stats;
  r.sequence = m.seq;
  return r;
}

GenerationParams params(int64_t max_tokens, double temperature = 0, uint64_t seed = 0) {
  GenerationParams p;
  p.max_tokens = max_tokens;
  p.sampling.temperature = temperature;
  p.sampling.seed = seed;
  return p;
}

struct Setting {
  std::string name;
  GenerationParams p;
  std::vector<TokenId> stops;
  int64_t capacity = 1 << 20;
  int64_t stop_after = -1;
  bool stop_from_run = false;  // the stop id: the 11th token of the run without one
};

std::vector<Setting> settings() {
  std::vector<Setting> s;
  s.push_back({"greedy", params(40), {}});
  s.push_back({"stop_id", params(40), {}, 1 << 20, -1, true});
  s.push_back({"context", params(40), {}, 17});
  s.push_back({"interrupted", params(40), {}, 1 << 20, 9});
  GenerationParams pen = params(40);
  pen.logits.penalties = {1.5, 0.7, 0.3};
  pen.logits.logit_bias = {{1, 0.5f}};
  s.push_back({"penalties_bias", pen, {}});
  GenerationParams mt = params(40);
  mt.min_tokens = 12;
  s.push_back({"min_tokens", mt, {2}});
  s.push_back({"sampled", params(40, 1.0, 7), {}});
  GenerationParams filt = params(40, 0.8, 11);
  filt.sampling.top_p = 0.9;
  filt.sampling.min_p = 0.05;
  filt.logits.penalties.frequency = 0.5;
  s.push_back({"sampled_filters_penalty", filt, {3}});
  return s;
}

// Every setting x drafts that are always right, right but for every 2nd or 3rd token, always
// wrong, or prompt lookup x k in {1, 3, 8}: the speculative run outputs the plain run's tokens
// with the same end, and leaves the model holding the same sequence.
TEST(Speculative, SameTokensAsPlainDecoding) {
  const std::vector<TokenId> prompt = {1, 2, 3, 1, 2, 3, 1, 2};
  for (Setting st : settings()) {
    FakeModel m;
    m.capacity = st.capacity;
    if (st.stop_from_run) st.stops = {plain(st.p, {}, prompt, m).tokens.at(10)};
    const Outcome want = plain(st.p, st.stops, prompt, m, st.stop_after);
    ASSERT_GE(want.tokens.size(), 2u) << st.name;
    if (!st.stops.empty()) {
      EXPECT_EQ(want.end, RunEnd::kStop) << st.name;  // the stop rule is exercised
    }
    for (int64_t k : {1, 3, 8}) {
      for (int64_t wrong : {0, 2, 3, 1, -1}) {
        ScriptDrafter script;
        script.script = want.tokens;
        script.prompt = prompt.size();
        script.wrong = wrong;
        NgramDrafter lookup({1, 3});
        Drafter& d = wrong < 0 ? static_cast<Drafter&>(lookup) : script;
        const Outcome got = speculative(st.p, st.stops, prompt, m, d, k, st.stop_after);
        const std::string what =
            st.name + " k " + std::to_string(k) + " wrong " + std::to_string(wrong);
        EXPECT_EQ(got.tokens, want.tokens) << what;
        EXPECT_EQ(got.end, want.end) << what;
        EXPECT_EQ(got.sequence, want.sequence) << what;
        EXPECT_EQ(got.stats.tokens, int64_t(want.tokens.size()) - 1) << what;
        if (wrong == 0 && k > 1 && want.tokens.size() >= 12) {  // all right: about k + 1 per pass
          EXPECT_GT(got.stats.tokens_per_pass(), 2.0) << what;
        }
        if (wrong == 1) {
          EXPECT_EQ(got.stats.accepted, 0) << what;
        }
        if (wrong == 0) {
          EXPECT_EQ(got.stats.accepted, got.stats.drafted) << what;
        }
      }
    }
  }
}

TEST(Speculative, DraftBoundsNameTheFlag) {
  FakeModel m;
  const std::vector<TokenId> prompt = {1};
  NgramDrafter d({1, 1});
  for (int64_t k : {int64_t{0}, kMaxDraftTokens + 1}) {
    try {
      speculative(params(4), {}, prompt, m, d, k);
      ADD_FAILURE() << k;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--spec-draft"), std::string::npos);
    }
  }
}

// Drafts token 0 at every position: accepted with the target's probability of 0.
struct ZeroDrafter final : Drafter {
  std::vector<TokenId> propose(std::span<const TokenId>, int64_t k) override {
    return std::vector<TokenId>(size_t(k), 0);
  }
};

// The exact probability of each 3-token output of the fake model after `prompt` at
// `temperature` (softmax of logits / temperature), indexed t1 * V^2 + t2 * V + t3.
std::vector<double> exact_joint(const std::vector<TokenId>& prompt, int64_t V, float scale,
                                double temperature) {
  std::vector<double> p(size_t(V * V * V), 1.0);
  std::vector<float> logits(static_cast<size_t>(V));
  for (int64_t cell = 0; cell < V * V * V; ++cell) {
    std::vector<TokenId> seq = prompt;
    const TokenId t[3] = {TokenId(cell / (V * V)), TokenId(cell / V % V), TokenId(cell % V)};
    for (TokenId tok : t) {
      fake_logits(seq, V, scale, logits.data());
      double z = 0;
      for (float x : logits) z += std::exp(double(x) / temperature);
      p[size_t(cell)] *= std::exp(double(logits[size_t(tok)]) / temperature) / z;
      seq.push_back(tok);
    }
  }
  return p;
}

// Pearson's statistic of `counts` against probabilities `p` over `n` draws, cells expected
// under 5 merged into one; *df gets the degrees of freedom.
double chi_square(const std::vector<int64_t>& counts, const std::vector<double>& p, int64_t n,
                  int64_t* df) {
  double stat = 0, small_e = 0, small_o = 0;
  int64_t cells = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double e = p[i] * double(n);
    if (e < 5) {
      small_e += e;
      small_o += double(counts[i]);
      continue;
    }
    stat += (double(counts[i]) - e) * (double(counts[i]) - e) / e;
    ++cells;
  }
  if (small_e > 0) {
    stat += (small_o - small_e) * (small_o - small_e) / small_e;
    ++cells;
  }
  *df = cells - 1;
  return stat;
}

// The chi-square quantile at upper tail 1e-6 (z = 4.753), by Wilson and Hilferty's cube-root
// approximation (accurate to well under 1% at these degrees of freedom).
double chi_square_critical_1e6(int64_t df) {
  const double k = double(df), z = 4.753;
  const double c = 1 - 2 / (9 * k) + z * std::sqrt(2 / (9 * k));
  return k * c * c * c;
}

// Sampling with speculation draws from the target distribution: 20000 requests of 3 tokens
// (seeds 1..20000, temperature 1, vocabulary 4) drafting token 0 twice per pass, against the
// exact joint probabilities. A correct sampler fails this with probability 1e-6 (the test is
// deterministic: the seeds are fixed). The same counts against the distribution at
// temperature 1.25 must fail it: the test can see an error of that size.
TEST(Speculative, SamplingKeepsTheTargetDistribution) {
  const std::vector<TokenId> prompt = {1, 3, 0, 2};
  FakeModel m;
  m.vocab = 4;
  const int64_t V = 4, draws = 20000;
  std::vector<int64_t> counts(size_t(V * V * V), 0);
  int64_t drafted = 0, accepted = 0;
  for (int64_t seed = 1; seed <= draws; ++seed) {
    ZeroDrafter d;
    const Outcome r = speculative(params(3, 1.0, uint64_t(seed)), {}, prompt, m, d, 2);
    ASSERT_EQ(r.tokens.size(), 3u);
    ++counts[size_t(r.tokens[0] * V * V + r.tokens[1] * V + r.tokens[2])];
    drafted += r.stats.drafted;
    accepted += r.stats.accepted;
  }
  // Both branches of the rule ran many times.
  EXPECT_GT(accepted, draws / 10);
  EXPECT_GT(drafted - accepted, draws / 10);
  int64_t df = 0;
  const double stat = chi_square(counts, exact_joint(prompt, V, m.scale, 1.0), draws, &df);
  EXPECT_LT(stat, chi_square_critical_1e6(df)) << "df " << df;
  const double wrong = chi_square(counts, exact_joint(prompt, V, m.scale, 1.25), draws, &df);
  EXPECT_GT(wrong, chi_square_critical_1e6(df)) << "df " << df;
}

// Forced drafts of acceptance a give (1 - a^(k+1)) / (1 - a) tokens per pass: 400-token
// runs of the fake model for a in {0, 0.5, 0.8, 1}, k in {1, 4}, against the formula within 4
// standard errors of the mean (the tokens of one pass vary by at most k; passes are
// independent).
TEST(Speculative, ForcedDraftsGiveTheExpectedTokensPerPass) {
  const std::vector<TokenId> prompt = {1, 2, 3};
  FakeModel m;
  const Outcome script = plain(params(401), {}, prompt, m);
  for (double a : {0.0, 0.5, 0.8, 1.0})
    for (int64_t k : {int64_t{1}, int64_t{4}}) {
      ForcedDrafter d(script.tokens, int64_t(prompt.size()), a, m.vocab);
      const Outcome got = speculative(params(401), {}, prompt, m, d, k);
      ASSERT_EQ(got.tokens, script.tokens);
      const double want = expected_tokens_per_pass(a, k);
      const double passes = double(got.stats.passes);
      const double sem = double(k) / 2 / std::sqrt(passes);  // sd <= k / 2 (bounded in 1..k+1)
      EXPECT_NEAR(got.stats.tokens_per_pass(), want, 4 * sem + 0.02)
          << "a " << a << " k " << k << " passes " << passes;
    }
  EXPECT_DOUBLE_EQ(expected_tokens_per_pass(0.5, 4), 1.9375);
}

}  // namespace
}  // namespace moex::generate
