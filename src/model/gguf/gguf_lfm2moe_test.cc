// The lfm2moe mapping (gguf_config_lfm2moe.cc) on a tiny file written key by key: a short-
// convolution layer with a dense FFN, then an attention layer with experts, tied embeddings
// and the final norm named token_embd_norm; each defect refused naming the key or tensor.
// gguf_model_test.py compares a twin of the tiny LFM2-MoE checkpoint with the checkpoint and
// with llama.cpp.
#include <gtest/gtest.h>

#include "model/gguf/gguf_model_test_util.h"

namespace moex::model {
namespace {

using testing_gguf::open_error;
using testing_gguf::expect_refused;
using testing_gguf::RefusalRows;
using testing_gguf::TinyModel;

// hidden 8, 2 heads of 4 (1 KV head in the attention layer, 0 in the convolution layer),
// kernel 3, dense FFN 16, 4 experts of 4, top-2, vocabulary 16, no output.weight.
TinyModel tiny_lfm2() {
  TinyModel m = TinyModel::with_basics("lfm2moe", 2, 1e-5f);
  const std::string a = "lfm2moe.";
  m.i32_array(a + "attention.head_count_kv", {0, 1});
  m.f32(a + "rope.freq_base", 1e6f);
  m.u32(a + "expert_count", 4);
  m.u32(a + "expert_used_count", 2);
  m.u32(a + "feed_forward_length", 16);
  m.u32(a + "expert_feed_forward_length", 4);
  m.u32(a + "leading_dense_block_count", 1);
  m.u32(a + "expert_gating_func", 2);
  m.u32(a + "shortconv.l_cache", 3);
  m.tensors = {{"token_embd.weight", {8, 16}}, {"token_embd_norm.weight", {8}}};
  for (int i = 0; i < 2; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    m.tensors[b + "attn_norm.weight"] = {8};
    m.tensors[b + "ffn_norm.weight"] = {8};
  }
  m.tensors["blk.0.shortconv.in_proj.weight"] = {8, 24};
  m.tensors["blk.0.shortconv.conv.weight"] = {3, 8};
  m.tensors["blk.0.shortconv.out_proj.weight"] = {8, 8};
  m.tensors["blk.0.ffn_gate.weight"] = {8, 16};
  m.tensors["blk.0.ffn_up.weight"] = {8, 16};
  m.tensors["blk.0.ffn_down.weight"] = {16, 8};
  for (const auto& [name, ne] : std::map<std::string, std::vector<uint64_t>>{
           {"attn_q.weight", {8, 8}}, {"attn_k.weight", {8, 4}}, {"attn_v.weight", {8, 4}},
           {"attn_output.weight", {8, 8}}, {"attn_q_norm.weight", {4}},
           {"attn_k_norm.weight", {4}}, {"ffn_gate_inp.weight", {8, 4}},
           {"ffn_gate_exps.weight", {8, 4, 4}}, {"ffn_up_exps.weight", {8, 4, 4}},
           {"ffn_down_exps.weight", {4, 8, 4}}, {"exp_probs_b.bias", {4}}})
    m.tensors["blk.1." + name] = ne;
  return m;
}

TEST(GgufLfm2Moe, TinyFileLoadsAsTheLfm2MoeFamily) {
  const TinyModel m = tiny_lfm2();
  EXPECT_EQ(open_error(m, "lfm2"), "");
  const ModelConfig c = load_gguf_model_config(m.write("lfm2_cfg"));
  EXPECT_EQ(c.family, "lfm2_moe");
  EXPECT_EQ(c.num_layers, 2);
  EXPECT_EQ(c.head_dim, 4);
  EXPECT_EQ(c.kv_heads, 1);
  EXPECT_EQ(c.conv_kernel, 3);
  EXPECT_EQ(c.dense_dff, 16);
  EXPECT_EQ(c.moe.expert_dff, 4);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_TRUE(c.moe.use_expert_bias);
  EXPECT_EQ(c.layers[0].mixer, MixerKind::kShortConv);
  EXPECT_EQ(c.layers[0].ffn, FfnKind::kDense);
  EXPECT_EQ(c.layers[1].mixer, MixerKind::kAttention);
  EXPECT_EQ(c.layers[1].ffn, FfnKind::kMoe);
}

TEST(GgufLfm2Moe, RefusedNamingTheKeyOrTensor) {
  const std::string a = "lfm2moe.";
  const RefusalRows cases = {
          {[&](TinyModel& m) { m.i32_array(a + "attention.head_count_kv", {0, 1, 1}); },
           {a + "attention.head_count_kv", "2 integers"}},
          {[&](TinyModel& m) { m.i32_array(a + "attention.head_count_kv", {0, 0}); },
           {a + "attention.head_count_kv", "no layer has attention"}},
          {[&](TinyModel& m) { m.i32_array(a + "attention.head_count_kv", {0, 3}); },
           {a + "attention.head_count_kv", "[0, 2]"}},
          {[&](TinyModel& m) { m.keys.erase(a + "shortconv.l_cache"); },
           {a + "shortconv.l_cache", "missing"}},
          {[&](TinyModel& m) { m.u32(a + "shortconv.l_cache", 1); },
           {a + "shortconv.l_cache", "[2, 64]"}},
          {[&](TinyModel& m) { m.keys.erase(a + "expert_gating_func"); },
           {a + "expert_gating_func", "missing"}},
          {[&](TinyModel& m) { m.u32(a + "expert_gating_func", 1); },
           {a + "expert_gating_func", "sigmoid"}},
          {[&](TinyModel& m) { m.u32(a + "leading_dense_block_count", 3); },
           {a + "leading_dense_block_count", "[0, 2]"}},
          {[&](TinyModel& m) { m.f32(a + "expert_weights_scale", -1.f); },
           {a + "expert_weights_scale", ">= 0"}},
          {[&](TinyModel& m) { m.tensors["output.weight"] = {8, 16}; },
           {"output.weight", "ties"}},
          {[&](TinyModel& m) { m.tensors.erase("blk.1.exp_probs_b.bias"); },
           {"blk.1.exp_probs_b.bias", "missing"}},
          {[&](TinyModel& m) { m.tensors["blk.0.shortconv.conv.weight"] = {4, 8}; },
           {"blk.0.shortconv.conv.weight", "expected [8, 3, 1]"}},
          {[&](TinyModel& m) {
             m.tensors.erase("token_embd_norm.weight");
             m.tensors["output_norm.weight"] = {8};
           },
           {"token_embd_norm.weight", "missing"}},
          {[&](TinyModel& m) { m.tensors["blk.0.attn_q.weight"] = {8, 8}; },
           {"blk.0.attn_q.weight", "nothing would read"}},
      };
  expect_refused(tiny_lfm2, "lfm2_bad_", cases);
}

}  // namespace
}  // namespace moex::model
