// Scheduler: requests decoded together give the tokens each gives alone; stop, length and
// context rules; the prompt cache; cancellation; the queue bound; logprobs; bad requests;
// each token's sampling time.
#include "serve/scheduler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/testing/temp_dir.h"
#include "model/engine/engine_test_util.h"
#include "serve/scheduler_test_util.h"

namespace moex::serve {
namespace {

namespace eng = model::engine;
using namespace scheduler_test;  // NOLINT: the helpers of every scheduler test

// Each token carries the time it was handed over, for time to first token and inter-token
// latency (serve/metrics.h).
TEST(RequestStream, TokensCarryWhenTheyWereSampled) {
  RequestStream s;
  const auto t0 = std::chrono::steady_clock::now();
  s.push({1, 0, {}, {}});
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  s.push({2, 0, {}, {}});
  const auto t1 = std::chrono::steady_clock::now();
  RequestStream::Event ev;
  ASSERT_TRUE(s.next(ev, std::chrono::milliseconds(0)));
  ASSERT_EQ(ev.tokens.size(), 2u);
  EXPECT_GE(ev.tokens[0].at, t0);
  EXPECT_GE(ev.tokens[1].at - ev.tokens[0].at, std::chrono::milliseconds(20));
  EXPECT_LE(ev.tokens[1].at, t1);
}

class SchedulerFamilies : public ::testing::TestWithParam<const char*> {};

// Six requests of different lengths on four slots: they queue, join and leave at different
// steps, and each gets the tokens it gets alone; the steps really batched several rows. With
// the default token budget several whole prompts run in one step; with a budget of 7 tokens
// prompts are cut into chunks that share steps with the decode tokens of other requests.
TEST_P(SchedulerFamilies, BatchedRequestsEqualEachAlone) {
  moex::testing::TempDir tmp("moex_scheduler");
  const std::string dir = eng::test::write_tiny_preset(GetParam(), tmp.file("m"));
  auto e = eng::Engine::open(dir, eng::test::options_for_fused("auto"));
  const int64_t V = e->vocab();
  std::vector<std::vector<int32_t>> prompts;
  std::vector<int> lengths;
  std::vector<std::vector<int32_t>> want;
  for (int q = 0; q < 6; ++q) {
    prompts.push_back(prompt_of(3 + 5 * q, q, V));
    lengths.push_back(4 + 3 * (q % 3));
    want.push_back(alone(dir, prompts.back(), lengths.back()));
  }
  for (const int64_t batch_tokens : {int64_t{0}, int64_t{7}}) {
    SchedulerOptions o;
    o.parallel = 4;
    o.batch_tokens = batch_tokens;
    Scheduler sched(*e, o);
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (int q = 0; q < 6; ++q) {
      auto sub = sched.submit(request(prompts[size_t(q)], lengths[size_t(q)]));
      ASSERT_TRUE(sub.stream) << sub.refusal;
      streams.push_back(sub.stream);
    }
    for (int q = 0; q < 6; ++q) {
      const Result r = collect(*streams[size_t(q)]);
      EXPECT_EQ(r.finish, Finish::kLength) << q;
      EXPECT_EQ(ids_of(r), want[size_t(q)])
          << GetParam() << " request " << q << " --batch-tokens " << batch_tokens;
      EXPECT_EQ(r.prompt_tokens, int64_t(prompts[size_t(q)].size()));
    }
    const SchedulerStats st = settled(sched);
    EXPECT_EQ(st.completed, 6);
    EXPECT_GT(st.decoded_rows, st.steps) << "no step decoded two sequences together";
    EXPECT_EQ(st.active, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, SchedulerFamilies,
                         ::testing::Values("tiny-qwen3-moe", "tiny-mixtral", "tiny-lfm2-moe"));

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = eng::test::write_tiny_preset("tiny-qwen3-moe", tmp_.file("m"));
  }
  std::unique_ptr<eng::Engine> open(int64_t context = 0) {
    eng::EngineOptions o = eng::test::options_for_fused("auto");
    o.context = context;
    return eng::Engine::open(dir_, o);
  }
  moex::testing::TempDir tmp_{"moex_scheduler_unit"};
  std::string dir_;
};

TEST_F(SchedulerTest, StopTokenEndsTheRequestUndelivered) {
  auto e = open();
  const auto prompt = prompt_of(6, 1, e->vocab());
  const auto ref = alone(dir_, prompt, 6);
  // The first greedy token that differs from the ones before it is the stop id.
  size_t k = 1;
  while (k < ref.size() && std::find(ref.begin(), ref.begin() + long(k), ref[k]) != ref.begin() + long(k)) ++k;
  ASSERT_LT(k, ref.size()) << "the reference repeats itself";
  SchedulerOptions o;
  o.stop_ids = {ref[k]};
  Scheduler sched(*e, o);
  const Result r = collect(*sched.submit(request(prompt, 6)).stream);
  EXPECT_EQ(r.finish, Finish::kStop);
  EXPECT_EQ(ids_of(r), std::vector<int32_t>(ref.begin(), ref.begin() + long(k)));
}

// vLLM's ignore_eos: the stop id is delivered like any token and the request runs to
// max_tokens, with the tokens it gets with no stop ids at all.
TEST_F(SchedulerTest, IgnoreEosDeliversTheStopIdAndRunsOn) {
  auto e = open();
  const auto prompt = prompt_of(6, 1, e->vocab());
  const auto ref = alone(dir_, prompt, 6);
  SchedulerOptions o;
  o.stop_ids = {ref[1]};
  Scheduler sched(*e, o);
  GenerationRequest g = request(prompt, 6);
  g.params.ignore_eos = true;
  const Result r = collect(*sched.submit(g).stream);
  EXPECT_EQ(r.finish, Finish::kLength);
  EXPECT_EQ(ids_of(r), ref);
}

// vLLM's min_tokens: the stop ids cannot be sampled before that many tokens. With the first
// greedy token as the stop id, a plain request ends at once; with min_tokens 3 the first three
// tokens avoid it (the masked argmax), and the request may stop only after them.
TEST_F(SchedulerTest, MinTokensMasksTheStopIds) {
  auto e = open();
  const auto prompt = prompt_of(6, 1, e->vocab());
  const auto ref = alone(dir_, prompt, 6);
  SchedulerOptions o;
  o.stop_ids = {ref[0]};
  Scheduler sched(*e, o);
  const Result plain = collect(*sched.submit(request(prompt, 6)).stream);
  EXPECT_EQ(plain.finish, Finish::kStop);
  EXPECT_TRUE(ids_of(plain).empty());
  GenerationRequest g = request(prompt, 6);
  g.params.min_tokens = 3;
  const Result r = collect(*sched.submit(g).stream);
  const std::vector<int32_t> got = ids_of(r);
  ASSERT_GE(got.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_NE(got[i], ref[0]) << "token " << i;
  if (r.finish == Finish::kStop) {
    EXPECT_LT(got.size(), 6u);
  }
}

TEST_F(SchedulerTest, FullContextEndsTheRequest) {
  auto e = open(8);
  Scheduler sched(*e, {});
  const auto prompt = prompt_of(5, 2, e->vocab());
  const Result r = collect(*sched.submit(request(prompt, 100)).stream);
  // Positions 5, 6, 7 run the generated tokens 1..3; the 4th cannot run.
  EXPECT_EQ(r.finish, Finish::kContext);
  EXPECT_EQ(ids_of(r), alone(dir_, prompt, 4));
  EXPECT_STREQ(finish_name(r.finish), "length");
}

TEST_F(SchedulerTest, PromptCacheReusesTheSharedPrefix) {
  auto e = open();
  Scheduler sched(*e, {});
  const int64_t V = e->vocab();
  std::vector<int32_t> first = prompt_of(12, 3, V);
  const Result a = collect(*sched.submit(request(first, 3)).stream);
  // A follow-up that extends the first prompt plus its answer, as a chat turn does.
  std::vector<int32_t> second = first;
  second.push_back(ids_of(a)[0]);
  second.push_back(ids_of(a)[1]);
  for (int32_t t : prompt_of(4, 9, V)) second.push_back(t);
  const Result b = collect(*sched.submit(request(second, 5)).stream);
  EXPECT_EQ(b.cached_tokens, 14);  // the first prompt and the two answer tokens that ran
  EXPECT_EQ(ids_of(b), alone(dir_, second, 5));
  EXPECT_EQ(sched.stats().cached_tokens, 14);
}

TEST_F(SchedulerTest, CancelFreesTheSlot) {
  auto e = open();
  Scheduler sched(*e, {});
  const int64_t V = e->vocab();
  auto s1 = sched.submit(request(prompt_of(4, 1, V), 1000)).stream;
  auto s2 = sched.submit(request(prompt_of(4, 2, V), 3)).stream;  // waits for the one slot
  RequestStream::Event ev;
  while (!s1->next(ev, std::chrono::milliseconds(100))) {
  }
  s1->cancel();
  const Result r1 = collect(*s1);
  EXPECT_EQ(r1.finish, Finish::kCancelled);
  EXPECT_LT(r1.tokens.size() + ev.tokens.size(), 1000u);
  const Result r2 = collect(*s2);
  EXPECT_EQ(r2.finish, Finish::kLength);
  EXPECT_EQ(ids_of(r2), alone(dir_, prompt_of(4, 2, V), 3));
  EXPECT_EQ(sched.stats().cancelled, 1);
}

TEST_F(SchedulerTest, QueueBeyondTheLimitIsRefused) {
  auto e = open();
  SchedulerOptions o;
  o.queue_limit = 1;
  Scheduler sched(*e, o);
  const int64_t V = e->vocab();
  std::vector<std::shared_ptr<RequestStream>> accepted;
  int refused = 0;
  for (int i = 0; i < 6; ++i) {
    auto sub = sched.submit(request(prompt_of(4, i, V), 50));
    if (sub.stream) {
      accepted.push_back(sub.stream);
    } else {
      EXPECT_TRUE(sub.queue_full);
      EXPECT_NE(sub.refusal.find("queue limit"), std::string::npos) << sub.refusal;
      ++refused;
    }
  }
  // At most one running and one waiting at any time, so at least four are refused... unless
  // the slot freed in between; with 50 tokens each, it cannot have.
  EXPECT_GE(refused, 4);
  for (auto& s : accepted) s->cancel();
  for (auto& s : accepted) EXPECT_NE(collect(*s).finish, Finish::kNone);
  EXPECT_EQ(sched.stats().rejected, refused);
}

TEST_F(SchedulerTest, LogprobsAreLogSoftmaxOfTheLogits) {
  auto e = open();
  const int64_t V = e->vocab();
  const auto prompt = prompt_of(7, 4, V);
  // The reference: log-softmax of the first token's logits.
  auto ref_engine = open();
  const float* l = ref_engine->prefill(prompt);
  double mx = l[0];
  for (int64_t i = 1; i < V; ++i) mx = std::max(mx, double(l[i]));
  double sum = 0;
  for (int64_t i = 0; i < V; ++i) sum += std::exp(double(l[i]) - mx);
  std::vector<double> lp(static_cast<size_t>(V));
  for (int64_t i = 0; i < V; ++i) lp[size_t(i)] = double(l[i]) - mx - std::log(sum);

  Scheduler sched(*e, {});
  GenerationRequest r = request(prompt, 2);
  r.logprobs = true;
  r.top_logprobs = 5;
  const Result res = collect(*sched.submit(r).stream);
  ASSERT_EQ(res.tokens.size(), 2u);
  const GeneratedToken& t = res.tokens[0];
  ASSERT_EQ(t.top.size(), 5u);
  EXPECT_EQ(t.top[0].id, t.id);  // greedy picks the most likely
  for (size_t i = 1; i < t.top.size(); ++i) EXPECT_LE(t.top[i].logprob, t.top[i - 1].logprob);
  for (const TokenLogprob& a : t.top) EXPECT_NEAR(a.logprob, lp[size_t(a.id)], 1e-5);
  EXPECT_NEAR(t.logprob, lp[size_t(t.id)], 1e-5);
  EXPECT_TRUE(res.tokens[1].top.size() == 5u);
}

std::string submit_error(Scheduler& s, GenerationRequest r) {
  try {
    s.submit(std::move(r));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST_F(SchedulerTest, BadRequestsNameTheField) {
  auto e = open(16);
  Scheduler sched(*e, {});
  const int64_t V = e->vocab();
  EXPECT_NE(submit_error(sched, request({}, 1)).find("prompt: no tokens"), std::string::npos);
  EXPECT_NE(submit_error(sched, request({1, int32_t(V)}, 1)).find("outside the vocabulary"),
            std::string::npos);
  EXPECT_NE(submit_error(sched, request(prompt_of(16, 0, V), 1)).find("no room"),
            std::string::npos);
  EXPECT_NE(submit_error(sched, request({1}, 0)).find("max_tokens"), std::string::npos);
  GenerationRequest r = request({1}, 1);
  r.top_logprobs = 21;
  EXPECT_NE(submit_error(sched, r).find("top_logprobs"), std::string::npos);
  r = request({1}, 1);
  r.params.sampling.temperature = -1;
  EXPECT_NE(submit_error(sched, r).find("--temp"), std::string::npos);  // the Sampler's check
  SchedulerOptions bad;
  bad.parallel = 0;
  EXPECT_THROW(Scheduler(*e, bad), Error);
  bad.parallel = 1;
  bad.batch_tokens = -1;
  try {
    Scheduler refused(*e, bad);
    ADD_FAILURE() << "--batch-tokens -1 was accepted";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("batch tokens: expected 1.."), std::string::npos)
        << err.what();
  }
}

TEST_F(SchedulerTest, ShutdownCancelsEverything) {
  auto e = open();
  auto sched = std::make_unique<Scheduler>(*e, SchedulerOptions{});
  auto s1 = sched->submit(request(prompt_of(4, 1, e->vocab()), 500)).stream;
  auto s2 = sched->submit(request(prompt_of(4, 2, e->vocab()), 500)).stream;
  sched->shutdown();
  EXPECT_EQ(collect(*s1).finish, Finish::kCancelled);
  EXPECT_EQ(collect(*s2).finish, Finish::kCancelled);
  EXPECT_FALSE(sched->submit(request({1}, 1)).stream);
}

}  // namespace
}  // namespace moex::serve
