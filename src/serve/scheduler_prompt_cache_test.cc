// The scheduler with a prompt cache: a request that shares a finished request's prefix loads it
// on another slot; eviction under a small budget; recurrent families served only at stored
// states. Every answer equals the same prompt's greedy tokens run alone.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/testing/temp_dir.h"
#include "model/engine/engine_test_util.h"
#include "serve/scheduler.h"
#include "serve/scheduler_test_util.h"

namespace moex::serve {
namespace {

namespace eng = model::engine;
using namespace scheduler_test;  // NOLINT: the helpers of every scheduler test
using Ids = std::vector<int32_t>;

Ids cat(Ids a, const Ids& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

SchedulerOptions with_cache(int parallel, int64_t bytes) {
  SchedulerOptions o;
  o.parallel = parallel;
  o.prompt_cache_bytes = bytes;
  o.prompt_cache_block = 4;
  return o;
}
constexpr int64_t kBig = int64_t(1) << 30;

GenerationRequest with_logprobs(Ids prompt, int64_t max_tokens) {
  GenerationRequest r = request(std::move(prompt), max_tokens);
  r.logprobs = true;
  r.top_logprobs = 3;
  return r;
}
// Every log-probability of a result (the token's and its alternatives'), for comparing two
// runs bit for bit: they are the log-softmax of each step's logits.
std::vector<float> logprobs_of(const Result& r) {
  std::vector<float> out;
  for (const GeneratedToken& t : r.tokens) {
    out.push_back(t.logprob);
    for (const TokenLogprob& a : t.top) out.push_back(a.logprob);
  }
  return out;
}
// The same request's log-probabilities on a fresh engine without a prompt cache.
std::vector<float> cold_logprobs(const std::string& dir, const Ids& prompt, int64_t n) {
  auto e = eng::Engine::open(dir, eng::test::options_for_fused("auto"));
  Scheduler sched(*e, {});
  return logprobs_of(collect(*sched.submit(with_logprobs(prompt, n)).stream));
}

// A runs on slot 0 and finishes; C takes slot 0 (A's tokens leave it); B, A's prompt and
// answer followed by more, lands on slot 1 and loads them from the cache. Without a cache B
// runs its whole prompt. Its tokens are those it gets alone either way, and its
// log-probabilities equal the cold run's bit for bit.
TEST(SchedulerPromptCache, AnotherSlotLoadsAFinishedRequestsPrefix) {
  moex::testing::TempDir tmp("moex_sched_cache");
  const std::string dir = eng::test::write_tiny_preset("tiny-qwen3-moe", tmp.file("m"));
  std::vector<float> lp[2];
  for (const int64_t budget : {kBig, int64_t(0)}) {
    auto e = eng::Engine::open(dir, eng::test::options_for_fused("auto"));
    const int64_t V = e->vocab();
    Scheduler sched(*e, with_cache(2, budget));
    const Ids a = prompt_of(20, 3, V);
    const Result ra = collect(*sched.submit(request(a, 3)).stream);
    ASSERT_EQ(ra.tokens.size(), 3u);
    // The slot ran A and its first two answer tokens (the third was sampled, not run).
    const Ids b = cat(cat(a, {ids_of(ra)[0], ids_of(ra)[1]}), prompt_of(4, 9, V));
    auto c = sched.submit(request(prompt_of(10, 5, V), 2000)).stream;  // holds slot 0
    const Result rb = collect(*sched.submit(with_logprobs(b, 5)).stream);
    lp[budget ? 0 : 1] = logprobs_of(rb);
    c->cancel();
    collect(*c);
    EXPECT_EQ(rb.cached_tokens, budget ? 22 : 0) << "budget " << budget;
    EXPECT_EQ(ids_of(rb), alone(dir, b, 5)) << "budget " << budget;
    const SchedulerStats st = settled(sched);
    EXPECT_EQ(st.prompt_cache.hits, budget ? 1 : 0);
    EXPECT_EQ(st.prompt_cache.hit_tokens, budget ? 22 : 0);
    EXPECT_EQ(st.prompt_cache.budget_bytes, budget);
    if (budget) {
      EXPECT_EQ(st.prompt_cache.misses, 2);  // A and C found nothing
      EXPECT_GE(st.prompt_cache.entries, 2);  // A (grown into B) and C
      EXPECT_GT(st.prompt_cache.bytes, 0);
    }
  }
  EXPECT_EQ(lp[0].size(), 5u * 4u);
  EXPECT_EQ(lp[0], lp[1]);
}

// With room for one entry, a second request's sequence evicts the first: a follow-up of the
// first then runs its whole prompt, and answers as it does alone.
TEST(SchedulerPromptCache, ASmallBudgetEvicts) {
  moex::testing::TempDir tmp("moex_sched_evict");
  const std::string dir = eng::test::write_tiny_preset("tiny-qwen3-moe", tmp.file("m"));
  auto e = eng::Engine::open(dir, eng::test::options_for_fused("auto"));
  const int64_t V = e->vocab();
  const Ids a = prompt_of(20, 3, V), d = prompt_of(20, 4, V);
  int64_t one = 0;  // bytes of one entry of 22 tokens
  {
    Scheduler probe(*e, with_cache(1, kBig));
    collect(*probe.submit(request(a, 3)).stream);
    one = settled(probe).prompt_cache.bytes;
  }
  ASSERT_GT(one, 0);
  Scheduler sched(*e, with_cache(1, one + one / 2));
  const Result ra = collect(*sched.submit(request(a, 3)).stream);
  collect(*sched.submit(request(d, 3)).stream);
  const Ids b = cat(cat(a, {ids_of(ra)[0], ids_of(ra)[1]}), prompt_of(4, 9, V));
  const Result rb = collect(*sched.submit(request(b, 5)).stream);
  EXPECT_EQ(rb.cached_tokens, 0);
  EXPECT_EQ(ids_of(rb), alone(dir, b, 5));
  const SchedulerStats st = settled(sched);
  EXPECT_GE(st.prompt_cache.evictions, 1);
  EXPECT_EQ(st.prompt_cache.hits, 0);
  EXPECT_LE(st.prompt_cache.bytes, st.prompt_cache.budget_bytes);
}

// Recurrent families on one slot: a conversation's next turn loads the state at the end of the
// last sequence, a prompt that leaves it after the first prompt loads the state at that
// prompt's end, and one that leaves it earlier runs whole; each answers as it does alone, with
// the cold run's log-probabilities bit for bit.
class SchedulerPromptCacheRecurrent : public ::testing::TestWithParam<const char*> {};

TEST_P(SchedulerPromptCacheRecurrent, LoadsOnlyStoredStates) {
  moex::testing::TempDir tmp("moex_sched_recurrent");
  const std::string dir = eng::test::write_tiny_preset(GetParam(), tmp.file("m"));
  auto e = eng::Engine::open(dir, eng::test::options_for_fused("auto"));
  const int64_t V = e->vocab();
  Scheduler sched(*e, with_cache(1, kBig));
  const Ids a = prompt_of(13, 1, V);
  const Result ra = collect(*sched.submit(request(a, 4)).stream);
  ASSERT_EQ(ra.tokens.size(), 4u);
  const Ids held = cat(a, {ids_of(ra)[0], ids_of(ra)[1], ids_of(ra)[2]});
  collect(*sched.submit(request(prompt_of(9, 2, V), 2)).stream);  // the slot moves on
  struct Case {
    Ids prompt;
    int64_t cached;
  };
  const std::vector<Case> cases = {
      {cat(held, prompt_of(3, 7, V)), int64_t(held.size())},  // the next turn
      {cat(a, prompt_of(3, 8, V)), int64_t(a.size())},         // leaves after A's prompt
      {cat(Ids(a.begin(), a.begin() + 10), prompt_of(3, 9, V)), 0},  // leaves inside it
  };
  for (const Case& k : cases) {
    const Result r = collect(*sched.submit(with_logprobs(k.prompt, 4)).stream);
    EXPECT_EQ(r.cached_tokens, k.cached) << GetParam() << " prompt of " << k.prompt.size();
    EXPECT_EQ(ids_of(r), alone(dir, k.prompt, 4)) << GetParam() << " prompt of " << k.prompt.size();
    EXPECT_EQ(logprobs_of(r), cold_logprobs(dir, k.prompt, 4))
        << GetParam() << " prompt of " << k.prompt.size();
  }
}

INSTANTIATE_TEST_SUITE_P(Families, SchedulerPromptCacheRecurrent,
                         ::testing::Values("tiny-qwen3-next", "tiny-nemotron-h"));

}  // namespace
}  // namespace moex::serve
