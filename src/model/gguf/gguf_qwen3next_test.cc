// The qwen3next and qwen35moe mappings (gguf_config_qwen3next.cc, gguf_config_qwen35moe.cc) on
// tiny files written key by key: a Gated DeltaNet layer (attn_qkv / attn_gate / ssm_* as the
// converters write them) then a gated attention layer, both MoE with a shared expert; each
// defect refused naming the key or tensor. gguf_model_test.py compares twins of the tiny
// Qwen3-Next and Qwen3.5-MoE checkpoints with the checkpoints and with llama.cpp.
#include <gtest/gtest.h>

#include "model/gguf/gguf_model_test_util.h"

namespace moex::model {
namespace {

using testing_gguf::expect_refused;
using testing_gguf::open_error;
using testing_gguf::RefusalRows;
using testing_gguf::TinyModel;

// hidden 8, 2 heads of 4 (1 KV head, 2 of 4 dims rotated), Gated DeltaNet of 1 key head and
// 2 value heads of 4 (conv 4), 2 experts of 4, top-1, a shared expert of 8, vocabulary 16.
TinyModel tiny_qwen3next() {
  TinyModel m = TinyModel::with_basics("qwen3next", 2, 1e-6f);
  m.u32("qwen3next.attention.key_length", 4);
  m.u32("qwen3next.attention.value_length", 4);
  m.u32("qwen3next.rope.dimension_count", 2);
  m.u32("qwen3next.expert_count", 2);
  m.u32("qwen3next.expert_used_count", 1);
  m.u32("qwen3next.expert_feed_forward_length", 4);
  m.u32("qwen3next.expert_shared_feed_forward_length", 8);
  m.u32("qwen3next.ssm.conv_kernel", 4);
  m.u32("qwen3next.ssm.state_size", 4);
  m.u32("qwen3next.ssm.group_count", 1);
  m.u32("qwen3next.ssm.time_step_rank", 2);
  m.u32("qwen3next.ssm.inner_size", 8);
  m.u32("qwen3next.full_attention_interval", 2);
  m.tensors = {{"token_embd.weight", {8, 16}}, {"output_norm.weight", {8}}};
  for (int i = 0; i < 2; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    for (const auto& [name, ne] : std::map<std::string, std::vector<uint64_t>>{
             {"attn_norm.weight", {8}}, {"post_attention_norm.weight", {8}},
             {"ffn_gate_inp.weight", {8, 2}}, {"ffn_gate_exps.weight", {8, 4, 2}},
             {"ffn_up_exps.weight", {8, 4, 2}}, {"ffn_down_exps.weight", {4, 8, 2}},
             {"ffn_gate_shexp.weight", {8, 8}}, {"ffn_up_shexp.weight", {8, 8}},
             {"ffn_down_shexp.weight", {8, 8}}, {"ffn_gate_inp_shexp.weight", {8}}})
      m.tensors[b + name] = ne;
  }
  // Layer 0: Gated DeltaNet ([q; k; v] = 4 + 4 + 8 rows, z 8, [b, a] 2 + 2, conv over 16).
  for (const auto& [name, ne] : std::map<std::string, std::vector<uint64_t>>{
           {"attn_qkv.weight", {8, 16}}, {"attn_gate.weight", {8, 8}},
           {"ssm_ba.weight", {8, 4}}, {"ssm_conv1d.weight", {4, 16}}, {"ssm_dt.bias", {2}},
           {"ssm_a", {2}}, {"ssm_norm.weight", {4}}, {"ssm_out.weight", {8, 8}}})
    m.tensors["blk.0." + name] = ne;
  // Layer 1: gated attention (q_proj gives query and gate: 2 x 2 heads x 4 rows).
  for (const auto& [name, ne] : std::map<std::string, std::vector<uint64_t>>{
           {"attn_q.weight", {8, 16}}, {"attn_k.weight", {8, 4}}, {"attn_v.weight", {8, 4}},
           {"attn_output.weight", {8, 8}}, {"attn_q_norm.weight", {4}},
           {"attn_k_norm.weight", {4}}})
    m.tensors["blk.1." + name] = ne;
  return m;
}

TEST(GgufQwen3Next, TinyFileLoadsAsTheQwen3NextFamily) {
  const TinyModel m = tiny_qwen3next();
  EXPECT_EQ(open_error(m, "qwen3next"), "");
  const ModelConfig c = load_gguf_model_config(m.write("qwen3next_cfg"));
  EXPECT_EQ(c.family, "qwen3_next");
  ASSERT_EQ(c.num_layers, 2);
  EXPECT_EQ(c.head_dim, 4);
  EXPECT_EQ(c.rope.dims, 2);
  EXPECT_EQ(c.qk_norm, QkNormKind::kPerHead);
  EXPECT_EQ(c.gdn.k_heads, 1);
  EXPECT_EQ(c.gdn.v_heads, 2);
  EXPECT_EQ(c.gdn.v_head_dim, 4);
  EXPECT_EQ(c.gdn.conv_kernel, 4);
  EXPECT_TRUE(c.gdn.a_log_holds_a);          // ssm_a is -exp(A_log) already
  EXPECT_FALSE(c.hf_layout_norms_plus_one);  // the converter added the 1
  EXPECT_EQ(c.layers[0].mixer, MixerKind::kGatedDeltaNet);
  EXPECT_TRUE(c.layers[0].names.gdn_qkvz.empty());
  EXPECT_FALSE(c.layers[0].names.gdn_qkv.empty());
  EXPECT_FALSE(c.layers[0].names.gdn_ba.empty());
  EXPECT_EQ(c.layers[1].mixer, MixerKind::kAttention);
  EXPECT_TRUE(c.layers[1].attn_output_gate);
  EXPECT_EQ(c.layers[0].ffn, FfnKind::kMoe);
  EXPECT_EQ(c.layers[1].ffn, FfnKind::kMoe);
  EXPECT_EQ(c.moe.shared_dff, 8);
  EXPECT_TRUE(c.moe.shared_expert_gated);
  EXPECT_TRUE(c.moe.router.renormalize);
  EXPECT_TRUE(c.tie_word_embeddings);
}

// The first converter wrote in_proj_qkvz unsplit as ssm_in (llama.cpp's "legacy" path): read
// as moex's interleaved qkvz.
TEST(GgufQwen3Next, LegacySsmInLoadsAsQkvz) {
  TinyModel m = tiny_qwen3next();
  m.tensors.erase("blk.0.attn_qkv.weight");
  m.tensors.erase("blk.0.attn_gate.weight");
  m.tensors["blk.0.ssm_in.weight"] = {8, 24};
  EXPECT_EQ(open_error(m, "qwen3next_legacy"), "");
  const ModelConfig c = load_gguf_model_config(m.write("qwen3next_legacy_cfg"));
  EXPECT_FALSE(c.layers[0].names.gdn_qkvz.empty());
  EXPECT_TRUE(c.layers[0].names.gdn_qkv.empty());
}

// nextn_predict_layers: the multi-token-prediction layer after the main ones is skipped.
TEST(GgufQwen3Next, NextnLayersAreSkipped) {
  TinyModel m = tiny_qwen3next();
  m.u32("qwen3next.block_count", 3);
  m.u32("qwen3next.nextn_predict_layers", 1);
  m.tensors["blk.2.nextn.eh_proj.weight"] = {16, 8};
  m.tensors["blk.2.attn_norm.weight"] = {8};
  EXPECT_EQ(open_error(m, "qwen3next_nextn"), "");
  EXPECT_EQ(load_gguf_model_config(m.write("qwen3next_nextn_cfg")).num_layers, 2);
}

// The same layers as qwen35moe: separate ssm_beta / ssm_alpha, M-RoPE sections, and (2 value
// heads per key head) the value heads stored tiled, which the binder puts back in order.
TinyModel tiny_qwen35moe() {
  TinyModel q = tiny_qwen3next();
  TinyModel m = TinyModel::with_basics("qwen35moe", 2, 1e-6f);
  for (const auto& [key, writer] : q.keys)
    if (key.rfind("qwen3next.", 0) == 0) m.keys["qwen35moe." + key.substr(10)] = writer;
  m.keys["qwen35moe.rope.dimension_sections"] = [](testing_gguf::Bytes& b) {
    b.u32(9).u32(5).u64(4).u32(11).u32(11).u32(10).u32(0);  // array of 4 int32
  };
  m.tensors = q.tensors;
  m.tensors.erase("blk.0.ssm_ba.weight");
  m.tensors["blk.0.ssm_beta.weight"] = {8, 2};
  m.tensors["blk.0.ssm_alpha.weight"] = {8, 2};
  return m;
}

TEST(GgufQwen3Next, Qwen35MoeLoadsAsTheQwen35MoeFamily) {
  const TinyModel m = tiny_qwen35moe();
  EXPECT_EQ(open_error(m, "qwen35moe"), "");
  const ModelConfig c = load_gguf_model_config(m.write("qwen35moe_cfg"));
  EXPECT_EQ(c.family, "qwen3_5_moe");
  ASSERT_EQ(c.num_layers, 2);
  EXPECT_EQ(c.rope.dims, 2);
  EXPECT_TRUE(c.gdn.a_log_holds_a);
  EXPECT_TRUE(c.gdn.gguf_v_tiled);   // 2 value heads per key head
  EXPECT_FALSE(c.gdn.v_tiled_out);   // an F32 out_proj: its columns are put back in order
  EXPECT_FALSE(c.hf_layout_norms_plus_one);
  EXPECT_FALSE(c.layers[0].names.gdn_b.empty());
  EXPECT_EQ(c.layers[1].mixer, MixerKind::kAttention);
}

TEST(GgufQwen3Next, Qwen35MoeRefusedNamingTheKeyOrTensor) {
  const auto sections = [](std::vector<uint32_t> v) {
    return [v](TinyModel& m) {
      m.keys["qwen35moe.rope.dimension_sections"] = [v](testing_gguf::Bytes& b) {
        b.u32(9).u32(4).u64(v.size());
        for (uint32_t x : v) b.u32(x);
      };
    };
  };
  const RefusalRows cases = {
          {[](TinyModel& m) { m.keys.erase("qwen35moe.rope.dimension_sections"); },
           {"qwen35moe.rope.dimension_sections"}},
          {sections({11, 11, 10}), {"qwen35moe.rope.dimension_sections", "4 integers"}},
          {sections({0, 0, 0, 4}), {"qwen35moe.rope.dimension_sections", "fourth"}},
          {[](TinyModel& m) { m.tensors.erase("blk.0.ssm_alpha.weight"); },
           {"missing tensor 'blk.0.ssm_alpha.weight'"}},
          {[](TinyModel& m) { m.tensors["blk.0.ssm_ba.weight"] = {8, 4}; },
           {"blk.0.ssm_ba.weight", "nothing would read"}},
      };
  expect_refused(tiny_qwen35moe, "qwen35moe_bad_", cases);
}

TEST(GgufQwen3Next, RefusedNamingTheKeyOrTensor) {
  // attention.recurrent_layers as a bool array of the given values.
  const auto recurrent = [](std::vector<uint8_t> v) {
    return [v](TinyModel& m) {
      m.keys["qwen3next.attention.recurrent_layers"] = [v](testing_gguf::Bytes& b) {
        b.u32(9).u32(7).u64(v.size());
        for (uint8_t x : v) b.u8(x);
      };
    };
  };
  const RefusalRows cases = {
          {[](TinyModel& m) { m.keys.erase("qwen3next.ssm.group_count"); },
           {"qwen3next.ssm.group_count", "missing"}},
          {[](TinyModel& m) { m.u32("qwen3next.ssm.group_count", 3); },
           {"qwen3next.ssm.time_step_rank", "multiple of ssm.group_count"}},
          {[](TinyModel& m) { m.u32("qwen3next.ssm.inner_size", 7); },
           {"qwen3next.ssm.inner_size", "value heads"}},
          {[](TinyModel& m) { m.u32("qwen3next.ssm.conv_kernel", 0); },
           {"qwen3next.ssm.conv_kernel"}},
          {[](TinyModel& m) { m.u32("qwen3next.full_attention_interval", 0); },
           {"qwen3next.full_attention_interval", "[1, 2]"}},
          {recurrent({1, 1}), {"qwen3next.attention.recurrent_layers", "layer 1"}},
          {recurrent({1}), {"qwen3next.attention.recurrent_layers", "a bool per layer"}},
          {[](TinyModel& m) { m.u32("qwen3next.rope.dimension_count", 3); },
           {"qwen3next.rope.dimension_count", "even"}},
          {[](TinyModel& m) { m.keys.erase("qwen3next.expert_shared_feed_forward_length"); },
           {"qwen3next.expert_shared_feed_forward_length"}},
          {[](TinyModel& m) { m.f32("qwen3next.expert_weights_scale", 2.f); },
           {"qwen3next.expert_weights_scale"}},
          {[](TinyModel& m) { m.tensors.erase("blk.0.attn_gate.weight"); },
           {"missing tensor 'blk.0.attn_gate.weight'"}},
          {[](TinyModel& m) { m.tensors.erase("blk.0.ssm_a"); }, {"missing tensor 'blk.0.ssm_a'"}},
          {[](TinyModel& m) { m.tensors["blk.0.ssm_conv1d.weight"] = {4, 15}; },
           {"blk.0.ssm_conv1d.weight", "expected [16, 4, 1]"}},
          {[](TinyModel& m) { m.tensors["blk.0.ssm_dt.bias"] = {3}; },
           {"blk.0.ssm_dt.bias", "expected [2]"}},
          {[](TinyModel& m) { m.tensors["blk.1.attn_q.weight"] = {8, 8}; },
           {"blk.1.attn_q.weight", "expected [16, 8]"}},
          {[](TinyModel& m) { m.tensors["blk.0.ssm_in.weight"] = {8, 24}; },
           {"blk.0.ssm_in.weight", "nothing would read"}},
      };
  expect_refused(tiny_qwen3next, "qwen3next_bad_", cases);
}

}  // namespace
}  // namespace moex::model
