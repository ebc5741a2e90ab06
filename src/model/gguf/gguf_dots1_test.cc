// The dots1 mapping (gguf_config_dots1.cc) on a tiny file written key by key: one dense layer
// then one MoE layer with shared experts, exp_probs_b, q/k norms and two expert groups; each
// defect refused naming the key or tensor. gguf_model_test.py compares a twin of the tiny
// dots.llm1 checkpoint with the checkpoint and with llama.cpp.
#include <gtest/gtest.h>

#include "model/gguf/gguf_model_test_util.h"

namespace moex::model {
namespace {

using testing_gguf::open_error;
using testing_gguf::expect_refused;
using testing_gguf::RefusalRows;
using testing_gguf::TinyModel;

// hidden 8, 2 heads of 4 (1 KV head), dense FFN 16, 4 experts of 4 in 2 groups (1 kept),
// 2 shared experts (8 wide), top-2, vocabulary 16.
TinyModel tiny_dots1() {
  TinyModel m = TinyModel::with_basics("dots1", 2, 1e-5f);
  m.u32("dots1.attention.key_length", 4);
  m.u32("dots1.expert_count", 4);
  m.u32("dots1.expert_used_count", 2);
  m.u32("dots1.expert_shared_count", 2);
  m.u32("dots1.feed_forward_length", 16);
  m.u32("dots1.expert_feed_forward_length", 4);
  m.u32("dots1.leading_dense_block_count", 1);
  m.u32("dots1.expert_gating_func", 2);
  m.u32("dots1.expert_group_count", 2);
  m.u32("dots1.expert_group_used_count", 1);
  m.f32("dots1.expert_weights_scale", 2.5f);
  m.boolean("dots1.expert_weights_norm", true);
  m.tensors = {{"token_embd.weight", {8, 16}}, {"output_norm.weight", {8}},
               {"output.weight", {8, 16}}};
  for (int i = 0; i < 2; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    for (const auto& [name, ne] : std::map<std::string, std::vector<uint64_t>>{
             {"attn_norm.weight", {8}}, {"ffn_norm.weight", {8}}, {"attn_q.weight", {8, 8}},
             {"attn_k.weight", {8, 4}}, {"attn_v.weight", {8, 4}},
             {"attn_output.weight", {8, 8}}, {"attn_q_norm.weight", {4}},
             {"attn_k_norm.weight", {4}}})
      m.tensors[b + name] = ne;
  }
  m.tensors["blk.0.ffn_gate.weight"] = {8, 16};
  m.tensors["blk.0.ffn_up.weight"] = {8, 16};
  m.tensors["blk.0.ffn_down.weight"] = {16, 8};
  m.tensors["blk.1.ffn_gate_inp.weight"] = {8, 4};
  m.tensors["blk.1.exp_probs_b.bias"] = {4};
  m.tensors["blk.1.ffn_gate_exps.weight"] = {8, 4, 4};
  m.tensors["blk.1.ffn_up_exps.weight"] = {8, 4, 4};
  m.tensors["blk.1.ffn_down_exps.weight"] = {4, 8, 4};
  m.tensors["blk.1.ffn_gate_shexp.weight"] = {8, 8};
  m.tensors["blk.1.ffn_up_shexp.weight"] = {8, 8};
  m.tensors["blk.1.ffn_down_shexp.weight"] = {8, 8};
  return m;
}

TEST(GgufDots1, TinyFileLoadsAsTheDots1Family) {
  const TinyModel m = tiny_dots1();
  EXPECT_EQ(open_error(m, "dots1"), "");
  const ModelConfig c = load_gguf_model_config(m.write("dots1_cfg"));
  EXPECT_EQ(c.family, "dots1");
  EXPECT_EQ(c.num_layers, 2);
  EXPECT_EQ(c.head_dim, 4);
  EXPECT_EQ(c.rope.dims, 4);
  EXPECT_FALSE(c.q_bias || c.k_bias || c.v_bias);
  EXPECT_EQ(c.qk_norm, QkNormKind::kPerHead);
  EXPECT_EQ(c.dense_dff, 16);
  EXPECT_EQ(c.moe.expert_dff, 4);
  EXPECT_EQ(c.moe.shared_dff, 8);
  EXPECT_EQ(c.moe.router.n_group, 2);
  EXPECT_EQ(c.moe.router.topk_group, 1);
  EXPECT_FLOAT_EQ(c.moe.router.routed_scaling, 2.5f);
  EXPECT_TRUE(c.moe.router.renormalize);
  EXPECT_TRUE(c.moe.use_expert_bias);
  EXPECT_EQ(c.layers[0].ffn, FfnKind::kDense);
  EXPECT_EQ(c.layers[1].ffn, FfnKind::kMoe);
}

TEST(GgufDots1, RefusedNamingTheKeyOrTensor) {
  const RefusalRows cases = {
          {[](TinyModel& m) { m.keys.erase("dots1.expert_gating_func"); },
           {"dots1.expert_gating_func", "missing", "sigmoid"}},
          {[](TinyModel& m) { m.u32("dots1.expert_gating_func", 1); },
           {"dots1.expert_gating_func", "sigmoid"}},
          {[](TinyModel& m) { m.u32("dots1.expert_gating_func", 9); },
           {"dots1.expert_gating_func", "[0, 3]"}},
          {[](TinyModel& m) { m.keys.erase("dots1.expert_shared_count"); },
           {"dots1.expert_shared_count", "missing"}},
          {[](TinyModel& m) { m.u32("dots1.expert_shared_count", 1u << 20); },
           {"dots1.expert_shared_count", "[1, 64]"}},
          {[](TinyModel& m) { m.u32("dots1.expert_group_count", 3); },
           {"dots1.expert_group_count", "must divide"}},
          {[](TinyModel& m) { m.u32("dots1.expert_group_used_count", 3); },
           {"dots1.expert_group_used_count", "[1, 2]"}},
          {[](TinyModel& m) { m.u32("dots1.leading_dense_block_count", 7); },
           {"dots1.leading_dense_block_count", "[0, 2]"}},
          {[](TinyModel& m) { m.u32("dots1.rope.dimension_count", 2); },
           {"dots1.rope.dimension_count", "partial RoPE"}},
          {[](TinyModel& m) { m.f32("dots1.expert_weights_scale", -1.f); },
           {"dots1.expert_weights_scale"}},
          {[](TinyModel& m) { m.tensors.erase("blk.1.exp_probs_b.bias"); },
           {"missing tensor 'blk.1.exp_probs_b.bias'"}},
          {[](TinyModel& m) { m.tensors["blk.1.ffn_up_shexp.weight"] = {8, 4}; },
           {"blk.1.ffn_up_shexp.weight", "expected [8, 8]"}},
          {[](TinyModel& m) { m.tensors["blk.0.attn_q.bias"] = {8}; },
           {"blk.0.attn_q.bias", "nothing would read"}},
      };
  expect_refused(tiny_dots1, "dots1_bad_", cases);
}

}  // namespace
}  // namespace moex::model
