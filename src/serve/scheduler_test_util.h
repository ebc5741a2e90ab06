// Helpers of the scheduler tests: prompts, a request's greedy tokens run alone on a fresh
// engine, and a stream's events collected until its finish.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "model/engine/engine_test_util.h"
#include "serve/scheduler.h"

namespace moex::serve::scheduler_test {

namespace eng = model::engine;

inline std::vector<int32_t> prompt_of(int64_t n, int64_t seed, int64_t vocab) {
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back(int32_t((i * 37 + seed * 101 + 11) % vocab));
  return ids;
}

// Greedy tokens of `prompt` on a fresh engine, one sequence, no stop ids.
inline std::vector<int32_t> alone(const std::string& dir, const std::vector<int32_t>& prompt, int n) {
  auto e = eng::Engine::open(dir, eng::test::options_for_fused("auto"));
  ::moex::ops::Sampler greedy({});
  std::vector<int32_t> out;
  const float* l = e->prefill(prompt);
  for (int i = 0; i < n; ++i) {
    out.push_back(int32_t(greedy.sample(l, e->vocab())));
    if (i + 1 < n) l = e->decode(out.back());
  }
  return out;
}

struct Result {
  std::vector<GeneratedToken> tokens;
  Finish finish = Finish::kNone;
  std::string error;
  int64_t prompt_tokens = 0, cached_tokens = 0;
};

inline Result collect(RequestStream& s) {
  Result r;
  RequestStream::Event ev;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (r.finish == Finish::kNone) {
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "no finish within 120 s";
      break;
    }
    if (!s.next(ev, std::chrono::milliseconds(100))) continue;
    r.tokens.insert(r.tokens.end(), ev.tokens.begin(), ev.tokens.end());
    r.finish = ev.finish;
    r.error = ev.error;
    r.prompt_tokens = ev.prompt_tokens;
    r.cached_tokens = ev.cached_tokens;
  }
  return r;
}

inline std::vector<int32_t> ids_of(const Result& r) {
  std::vector<int32_t> ids;
  for (const auto& t : r.tokens) ids.push_back(t.id);
  return ids;
}

inline GenerationRequest request(std::vector<int32_t> prompt, int64_t max_tokens) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.params.max_tokens = max_tokens;
  return r;
}

// The scheduler's stats once the step that ended the last request has published them (a
// stream finishes inside the step; its counts follow at the step's end).
inline SchedulerStats settled(const Scheduler& s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  SchedulerStats st = s.stats();
  while ((st.active > 0 || st.queued > 0) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    st = s.stats();
  }
  return st;
}

}  // namespace moex::serve::scheduler_test
