// The minimax-m2 mapping (gguf_config_minimax_m2.cc) on a tiny file written key by key: one
// MoE layer with q/k norms over all heads, partial RoPE and exp_probs_b; each defect refused
// naming the key or tensor. gguf_model_test.py compares a twin of the tiny MiniMax-M2
// checkpoint with the checkpoint and with llama.cpp.
#include <gtest/gtest.h>

#include "model/gguf/gguf_model_test_util.h"

namespace moex::model {
namespace {

using testing_gguf::open_error;
using testing_gguf::expect_refused;
using testing_gguf::RefusalRows;
using testing_gguf::TinyModel;

// hidden 8, 2 heads of 4 (1 KV head), RoPE over 2 of the 4 dims, 4 experts of 4, top-2,
// vocabulary 16, an untied head.
TinyModel tiny_minimax() {
  TinyModel m = TinyModel::with_basics("minimax-m2", 1, 1e-6f);
  const std::string a = "minimax-m2.";
  m.u32(a + "attention.key_length", 4);
  m.u32(a + "rope.dimension_count", 2);
  m.f32(a + "rope.freq_base", 5e6f);
  m.u32(a + "expert_count", 4);
  m.u32(a + "expert_used_count", 2);
  m.u32(a + "feed_forward_length", 4);
  m.u32(a + "expert_feed_forward_length", 4);
  m.u32(a + "expert_gating_func", 2);
  m.tensors = {{"token_embd.weight", {8, 16}}, {"output_norm.weight", {8}},
               {"output.weight", {8, 16}}};
  for (const auto& [name, ne] : std::map<std::string, std::vector<uint64_t>>{
           {"attn_norm.weight", {8}}, {"ffn_norm.weight", {8}}, {"attn_q.weight", {8, 8}},
           {"attn_k.weight", {8, 4}}, {"attn_v.weight", {8, 4}}, {"attn_output.weight", {8, 8}},
           {"attn_q_norm.weight", {8}}, {"attn_k_norm.weight", {4}},
           {"ffn_gate_inp.weight", {8, 4}}, {"exp_probs_b.bias", {4}},
           {"ffn_gate_exps.weight", {8, 4, 4}}, {"ffn_up_exps.weight", {8, 4, 4}},
           {"ffn_down_exps.weight", {4, 8, 4}}})
    m.tensors["blk.0." + name] = ne;
  return m;
}

TEST(GgufMinimaxM2, TinyFileLoadsAsTheMinimaxFamily) {
  const TinyModel m = tiny_minimax();
  EXPECT_EQ(open_error(m, "minimax"), "");
  const ModelConfig c = load_gguf_model_config(m.write("minimax_cfg"));
  EXPECT_EQ(c.family, "minimax");
  EXPECT_EQ(c.head_dim, 4);
  EXPECT_EQ(c.rope.dims, 2);
  EXPECT_FALSE(c.rope.traditional);
  EXPECT_EQ(c.qk_norm, QkNormKind::kFullWidth);
  EXPECT_EQ(c.moe.expert_dff, 4);
  EXPECT_TRUE(c.moe.use_expert_bias);
  EXPECT_FALSE(c.tie_word_embeddings);
}

TEST(GgufMinimaxM2, RefusedNamingTheKeyOrTensor) {
  const std::string a = "minimax-m2.";
  const RefusalRows cases = {
          {[&](TinyModel& m) { m.keys.erase(a + "expert_gating_func"); },
           {a + "expert_gating_func", "missing"}},
          {[&](TinyModel& m) { m.u32(a + "expert_gating_func", 1); },
           {a + "expert_gating_func", "sigmoid"}},
          {[&](TinyModel& m) { m.u32(a + "rope.dimension_count", 3); },
           {a + "rope.dimension_count", "even"}},
          {[&](TinyModel& m) { m.u32(a + "rope.dimension_count", 8); },
           {a + "rope.dimension_count", "[2, 4]"}},
          {[&](TinyModel& m) { m.keys.erase(a + "expert_feed_forward_length"); },
           {a + "expert_feed_forward_length", "missing"}},
          {[&](TinyModel& m) { m.f32(a + "expert_weights_scale", 2.f); },
           {a + "expert_weights_scale", "expected 1"}},
          {[&](TinyModel& m) { m.tensors.erase("output.weight"); },
           {"output.weight", "untied"}},
          {[&](TinyModel& m) { m.tensors["blk.0.attn_q_norm.weight"] = {4}; },
           {"blk.0.attn_q_norm.weight", "expected [8]"}},
          {[&](TinyModel& m) { m.tensors.erase("blk.0.exp_probs_b.bias"); },
           {"blk.0.exp_probs_b.bias", "missing"}},
      };
  expect_refused(tiny_minimax, "minimax_bad_", cases);
}

}  // namespace
}  // namespace moex::model
