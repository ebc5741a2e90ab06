// The nemotron_h_moe mapping (gguf_config_nemotron_h.cc) on a tiny file written key by key: a
// Mamba-2 block, a MoE block and an attention block, their kinds given by the per-layer
// head_count_kv / feed_forward_length arrays; each defect refused naming the key or tensor.
// gguf_model_test.py compares a twin of the tiny Nemotron-H checkpoint with the checkpoint and
// with llama.cpp.
#include <gtest/gtest.h>

#include "model/gguf/gguf_model_test_util.h"

namespace moex::model {
namespace {

using testing_gguf::Bytes;
using testing_gguf::expect_refused;
using testing_gguf::open_error;
using testing_gguf::RefusalRows;
using testing_gguf::TinyModel;

// An array of uint32 values as a key's writer.
std::function<void(Bytes&)> u32_array(std::vector<uint32_t> v) {
  return [v](Bytes& b) {
    b.u32(9).u32(4).u64(v.size());
    for (uint32_t x : v) b.u32(x);
  };
}

// hidden 8, blocks M E *: Mamba-2 of 2 heads of 4 (2 groups of state 4, conv 4 with a bias),
// 2 relu2 experts of 4 (top-2) and a shared expert of 8, attention of 2 heads of 4 (1 KV head),
// vocabulary 16, an untied head.
TinyModel tiny_nemotron_h() {
  TinyModel m = TinyModel::with_basics("nemotron_h_moe", 3, 1e-5f);
  const std::string a = "nemotron_h_moe.";
  m.keys[a + "attention.head_count_kv"] = u32_array({0, 0, 1});
  m.keys[a + "feed_forward_length"] = u32_array({0, 4, 0});
  m.u32(a + "attention.key_length", 4);
  m.u32(a + "attention.value_length", 4);
  m.u32(a + "expert_count", 2);
  m.u32(a + "expert_used_count", 2);
  m.u32(a + "expert_feed_forward_length", 4);
  m.u32(a + "expert_shared_count", 1);
  m.u32(a + "expert_shared_feed_forward_length", 8);
  m.boolean(a + "expert_weights_norm", true);
  m.f32(a + "expert_weights_scale", 2.5f);
  m.u32(a + "ssm.conv_kernel", 4);
  m.u32(a + "ssm.state_size", 4);
  m.u32(a + "ssm.group_count", 2);
  m.u32(a + "ssm.inner_size", 8);
  m.u32(a + "ssm.time_step_rank", 2);
  m.tensors = {{"token_embd.weight", {8, 16}}, {"output_norm.weight", {8}},
               {"output.weight", {8, 16}}};
  for (int i = 0; i < 3; ++i) m.tensors["blk." + std::to_string(i) + ".attn_norm.weight"] = {8};
  // Mamba-2: in_proj [z (8); xBC (8 + 2 x 2 x 4); dt (2)], A and D as [heads, 1], the gated
  // norm as [groups, inner / groups].
  for (const auto& [name, ne] : std::map<std::string, std::vector<uint64_t>>{
           {"ssm_in.weight", {8, 34}}, {"ssm_conv1d.weight", {4, 24}},
           {"ssm_conv1d.bias", {24}}, {"ssm_dt.bias", {2}}, {"ssm_a", {1, 2}}, {"ssm_d", {1, 2}},
           {"ssm_norm.weight", {4, 2}}, {"ssm_out.weight", {8, 8}}})
    m.tensors["blk.0." + name] = ne;
  for (const auto& [name, ne] : std::map<std::string, std::vector<uint64_t>>{
           {"ffn_gate_inp.weight", {8, 2}}, {"exp_probs_b.bias", {2}},
           {"ffn_up_exps.weight", {8, 4, 2}}, {"ffn_down_exps.weight", {4, 8, 2}},
           {"ffn_up_shexp.weight", {8, 8}}, {"ffn_down_shexp.weight", {8, 8}}})
    m.tensors["blk.1." + name] = ne;
  for (const auto& [name, ne] : std::map<std::string, std::vector<uint64_t>>{
           {"attn_q.weight", {8, 8}}, {"attn_k.weight", {8, 4}}, {"attn_v.weight", {8, 4}},
           {"attn_output.weight", {8, 8}}})
    m.tensors["blk.2." + name] = ne;
  return m;
}

TEST(GgufNemotronH, TinyFileLoadsAsTheNemotronHFamily) {
  const TinyModel m = tiny_nemotron_h();
  EXPECT_EQ(open_error(m, "nemotron_h"), "");
  const ModelConfig c = load_gguf_model_config(m.write("nemotron_h_cfg"));
  EXPECT_EQ(c.family, "nemotron_h");
  ASSERT_EQ(c.num_layers, 3);
  EXPECT_EQ(c.layers[0].mixer, MixerKind::kMamba2);
  EXPECT_EQ(c.layers[1].ffn, FfnKind::kMoe);
  EXPECT_EQ(c.layers[2].mixer, MixerKind::kAttention);
  EXPECT_EQ(c.kv_heads, 1);
  EXPECT_EQ(c.mamba.heads, 2);
  EXPECT_EQ(c.mamba.head_dim, 4);
  EXPECT_EQ(c.mamba.groups, 2);
  EXPECT_TRUE(c.mamba.conv_bias);
  EXPECT_TRUE(c.mamba.a_log_holds_a);  // ssm_a is -exp(A_log) already
  EXPECT_EQ(c.moe.shared_dff, 8);
  EXPECT_TRUE(c.moe.router.renormalize);
  EXPECT_FLOAT_EQ(c.moe.router.routed_scaling, 2.5f);
  EXPECT_TRUE(c.moe.use_expert_bias);
}

TEST(GgufNemotronH, RefusedNamingTheKeyOrTensor) {
  const std::string a = "nemotron_h_moe.";
  const RefusalRows cases = {
          {[a](TinyModel& m) { m.keys.erase(a + "attention.head_count_kv"); },
           {"nemotron_h_moe.attention.head_count_kv", "missing"}},
          {[a](TinyModel& m) { m.keys[a + "feed_forward_length"] = u32_array({0, 4}); },
           {"nemotron_h_moe.feed_forward_length", "an integer per layer (3)"}},
          {[a](TinyModel& m) { m.keys[a + "attention.head_count_kv"] = u32_array({0, 0, 3}); },
           {"nemotron_h_moe.attention.head_count_kv", "[0, 2]"}},
          {[a](TinyModel& m) { m.u32(a + "expert_gating_func", 1); },
           {"nemotron_h_moe.expert_gating_func", "sigmoid"}},
          {[a](TinyModel& m) { m.u32(a + "moe_latent_size", 4); },
           {"nemotron_h_moe.moe_latent_size", "latent"}},
          {[a](TinyModel& m) { m.u32(a + "expert_group_count", 2); },
           {"nemotron_h_moe.expert_group_used_count", "missing"}},
          {[a](TinyModel& m) { m.u32(a + "ssm.inner_size", 7); },
           {"nemotron_h_moe.ssm.inner_size"}},
          {[](TinyModel& m) { m.tensors.erase("output.weight"); },
           {"output.weight", "untied"}},
          {[](TinyModel& m) { m.tensors["blk.0.ssm_norm.weight"] = {3, 2}; },
           {"blk.0.ssm_norm.weight", "expected [8]"}},
          {[](TinyModel& m) { m.tensors["blk.0.ssm_in.weight"] = {8, 33}; },
           {"blk.0.ssm_in.weight", "expected [34, 8]"}},
          {[](TinyModel& m) { m.tensors.erase("blk.0.ssm_d"); }, {"missing tensor 'blk.0.ssm_d'"}},
          {[](TinyModel& m) { m.tensors["blk.0.ssm_conv1d.bias"] = {8}; },
           {"blk.0.ssm_conv1d.bias", "expected [24]"}},
          {[](TinyModel& m) { m.tensors.erase("blk.1.exp_probs_b.bias"); },
           {"missing tensor 'blk.1.exp_probs_b.bias'"}},
      };
  expect_refused(tiny_nemotron_h, "nemotron_h_bad_", cases);
}

}  // namespace
}  // namespace moex::model
