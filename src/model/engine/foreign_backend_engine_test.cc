// The whole engine on a backend whose memory is not the host's: the foreign-memory checking
// backend runs the CPU backend's ops but refuses any pointer outside its own allocations, so
// an engine that hands an op host memory (a small weight not placed, a host scratch vector,
// the tokens) fails here on a machine without a GPU. On every family the logits equal the CPU
// backend's bit for bit: a prefill, greedy decode steps, batched steps of two sequences (one
// with every row of a part), every row's logits, and a prompt-cache round trip of the KV rows
// and recurrent states.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/foreign_backend_test_util.h"
#include "model/engine/engine.h"
#include "model/engine/engine_test_util.h"
#include "model/engine/sequence_state.h"

namespace moex::model::engine {
namespace {

using test::argmax;
using test::prompt_of;

// The two engines' results of one call, compared as bytes.
void expect_same(const float* cpu, const float* foreign, int64_t n, const std::string& what) {
  ASSERT_EQ(std::memcmp(cpu, foreign, size_t(n) * sizeof(float)), 0) << what;
}

class ForeignBackendEngine : public ::testing::TestWithParam<const char*> {};

TEST_P(ForeignBackendEngine, LogitsEqualTheCpuBackendBitForBit) {
  const std::string& dir = test::shared_tiny_family(GetParam());
  static const backend::conformance::ForeignMemoryBackend foreign;
  EngineOptions cpu_opt = test::options_for_fused("on");
  EngineOptions foreign_opt = cpu_opt;
  foreign_opt.model_backend = &foreign;
  auto a = Engine::open(dir, cpu_opt);
  auto b = Engine::open(dir, foreign_opt);
  const int64_t V = a->vocab();

  // Prefill, then greedy decode steps.
  const std::vector<int32_t> prompt = prompt_of(13, 1, V);
  const float* la = a->prefill(prompt);
  const float* lb = b->prefill(prompt);
  expect_same(la, lb, V, "prefill");
  int32_t tok = argmax(la, V);
  for (int step = 0; step < 5; ++step) {
    la = a->decode(tok);
    lb = b->decode(tok);
    expect_same(la, lb, V, "decode step " + std::to_string(step));
    tok = argmax(la, V);
  }

  // Two more sequences, prefilled and then decoded together in one batched step.
  std::unique_ptr<Sequence> sa[2] = {a->new_sequence(), a->new_sequence()};
  std::unique_ptr<Sequence> sb[2] = {b->new_sequence(), b->new_sequence()};
  int32_t next[2];
  for (int i = 0; i < 2; ++i) {
    const std::vector<int32_t> p = prompt_of(6 + 5 * i, 2 + i, V);
    la = a->forward(*sa[i], p.data(), int64_t(p.size()));
    lb = b->forward(*sb[i], p.data(), int64_t(p.size()));
    expect_same(la, lb, V, "prefill of sequence " + std::to_string(i));
    next[i] = argmax(la, V);
  }
  Sequence* ra[2] = {sa[0].get(), sa[1].get()};
  Sequence* rb[2] = {sb[0].get(), sb[1].get()};
  la = a->decode_batch(ra, next, 2);
  lb = b->decode_batch(rb, next, 2);
  expect_same(la, lb, 2 * V, "batched decode step");
  // A batched step whose first part takes every row's logits (speculative verification).
  {
    const int32_t drafts[3] = {argmax(la, V), 7, 11};
    const int32_t one = argmax(la + V, V);
    const SequenceChunk pa[2] = {{sa[0].get(), drafts, 3, true, true}, {sa[1].get(), &one, 1}};
    const SequenceChunk pb[2] = {{sb[0].get(), drafts, 3, true, true}, {sb[1].get(), &one, 1}};
    la = a->forward_batch(pa, 2);
    lb = b->forward_batch(pb, 2);
    expect_same(la, lb, 4 * V, "batched step with every row of a part");
  }

  // Every row's logits of a prompt (perplexity scoring, speculative verification).
  {
    auto ea = a->new_sequence();
    auto eb = b->new_sequence();
    const std::vector<int32_t> p = prompt_of(9, 5, V);
    la = a->forward_every_row(*ea, p.data(), int64_t(p.size()));
    lb = b->forward_every_row(*eb, p.data(), int64_t(p.size()));
    expect_same(la, lb, int64_t(p.size()) * V, "every row");
  }

  // The prompt cache's round trip: the KV rows and recurrent states of the first sequence,
  // loaded into a fresh sequence, continue as the original does.
  const int64_t pos = a->position();
  ASSERT_EQ(b->position(), pos);
  const KvChunk ka = copy_kv_rows(a->sequence(), 0, pos);
  const KvChunk kb = copy_kv_rows(b->sequence(), 0, pos);
  ASSERT_EQ(ka.layers.size(), kb.layers.size());
  for (size_t l = 0; l < ka.layers.size(); ++l) {
    EXPECT_EQ(ka.layers[l].k, kb.layers[l].k) << "layer " << l << " keys";
    EXPECT_EQ(ka.layers[l].v, kb.layers[l].v) << "layer " << l << " values";
  }
  const auto states_a = copy_recurrent_states(a->sequence());
  const auto states_b = copy_recurrent_states(b->sequence());
  EXPECT_EQ(states_a, states_b);
  auto ca = a->new_sequence();
  auto cb = b->new_sequence();
  load_state(*ca, {ka}, pos, states_a);
  load_state(*cb, {kb}, pos, states_b);
  la = a->forward(*ca, &tok, 1);
  lb = b->forward(*cb, &tok, 1);
  expect_same(la, lb, V, "a step after load_state");
  const std::vector<float> loaded(la, la + V);  // the next call reuses the engine's logits
  const float* original = a->decode(tok);
  EXPECT_EQ(std::memcmp(original, loaded.data(), size_t(V) * sizeof(float)), 0)
      << "the loaded sequence does not continue as the original";
}

INSTANTIATE_TEST_SUITE_P(Families, ForeignBackendEngine, test::tiny_families());

}  // namespace
}  // namespace moex::model::engine
