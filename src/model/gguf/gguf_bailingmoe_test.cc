// The bailingmoe mapping (gguf_config_bailingmoe.cc) on a tiny file written key by key: it
// loads as moex's bailing_moe family with split q / k / v modules in place of the fused
// query_key_value, softmax routing without bias or groups, and the file's (already
// normalized) head read as it is; each defect is refused naming the key or tensor.
// gguf_model_test.py compares a twin of the tiny Ling checkpoint (its v1 shape) with the
// checkpoint and with llama.cpp.
#include <gtest/gtest.h>

#include "model/gguf/gguf_model_test_util.h"

namespace moex::model {
namespace {

using testing_gguf::open_error;
using testing_gguf::expect_refused;
using testing_gguf::RefusalRows;
using testing_gguf::TinyModel;

// hidden 8, 2 heads of 4 (1 KV head), 2 layers, 4 experts of 4 top-2 renormalized, 2 shared
// experts (8 wide), an untied head, vocabulary 16: Ling-lite's shape in miniature.
TinyModel tiny_bailing() {
  TinyModel m = TinyModel::with_basics("bailingmoe", 2, 1e-6f);
  const std::string a = "bailingmoe.";
  m.f32(a + "rope.freq_base", 600000.f);
  m.u32(a + "rope.dimension_count", 4);
  m.u32(a + "leading_dense_block_count", 0);
  m.u32(a + "expert_count", 4);
  m.u32(a + "expert_used_count", 2);
  m.u32(a + "expert_shared_count", 2);
  m.u32(a + "feed_forward_length", 16);
  m.u32(a + "expert_feed_forward_length", 4);
  m.f32(a + "expert_weights_scale", 1.f);
  m.boolean(a + "expert_weights_norm", true);
  m.tensors = {{"token_embd.weight", {8, 16}}, {"output_norm.weight", {8}},
               {"output.weight", {8, 16}}};
  for (int i = 0; i < 2; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    for (const auto& [name, ne] : std::map<std::string, std::vector<uint64_t>>{
             {"attn_norm.weight", {8}}, {"ffn_norm.weight", {8}}, {"attn_q.weight", {8, 8}},
             {"attn_k.weight", {8, 4}}, {"attn_v.weight", {8, 4}},
             {"attn_output.weight", {8, 8}}, {"ffn_gate_inp.weight", {8, 4}},
             {"ffn_gate_exps.weight", {8, 4, 4}}, {"ffn_up_exps.weight", {8, 4, 4}},
             {"ffn_down_exps.weight", {4, 8, 4}}, {"ffn_gate_shexp.weight", {8, 8}},
             {"ffn_up_shexp.weight", {8, 8}}, {"ffn_down_shexp.weight", {8, 8}}})
      m.tensors[b + name] = ne;
  }
  return m;
}

TEST(GgufBailingMoe, TinyFileLoadsAsTheBailingFamilyWithSplitQkv) {
  const TinyModel m = tiny_bailing();
  EXPECT_EQ(open_error(m, "bailing"), "");
  const ModelConfig c = load_gguf_model_config(m.write("bailing_cfg"));
  EXPECT_EQ(c.family, "bailing_moe");
  EXPECT_EQ(c.head_dim, 4);
  EXPECT_EQ(c.rope.dims, 4);  // full RoPE
  EXPECT_EQ(c.qk_norm, QkNormKind::kNone);
  EXPECT_FALSE(c.q_bias || c.o_bias);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.lm_head_column_norm);  // the converter normalized the head already
  EXPECT_EQ(c.rope.theta, 600000.0);
  EXPECT_EQ(c.moe.expert_dff, 4);
  EXPECT_EQ(c.moe.shared_dff, 8);
  EXPECT_FALSE(c.moe.use_expert_bias);
  EXPECT_TRUE(c.moe.router.softmax_scores);
  EXPECT_TRUE(c.moe.router.renormalize);
  EXPECT_EQ(c.moe.router.n_group, 1);
  EXPECT_EQ(c.moe.router.routed_scaling, 1.f);
  for (const LayerPlan& l : c.layers) {
    EXPECT_EQ(l.ffn, FfnKind::kMoe);
    EXPECT_TRUE(l.names.qkv.empty());
    EXPECT_EQ(l.names.q.substr(l.names.q.rfind('.')), ".q_proj");
    EXPECT_FALSE(l.names.k.empty() || l.names.v.empty());
  }
}

TEST(GgufBailingMoe, RefusedNamingTheKeyOrTensor) {
  const std::string a = "bailingmoe.";
  const RefusalRows cases = {
          {[&](TinyModel& m) { m.keys.erase(a + "expert_feed_forward_length"); },
           {a + "expert_feed_forward_length", "missing"}},
          {[&](TinyModel& m) { m.keys.erase(a + "expert_shared_count"); },
           {a + "expert_shared_count", "missing"}},
          {[&](TinyModel& m) { m.u32(a + "leading_dense_block_count", 1); },
           {a + "leading_dense_block_count", "every layer MoE"}},
          {[&](TinyModel& m) { m.u32(a + "rope.dimension_count", 2); },
           {a + "rope.dimension_count", "partial RoPE"}},
          {[&](TinyModel& m) { m.u32(a + "attention.key_length", 2); },
           {a + "attention.key_length", "embedding_length / head_count"}},
          {[&](TinyModel& m) { m.tensors.erase("output.weight"); },
           {"output.weight", "missing", "untied"}},
          {[&](TinyModel& m) {  // a fused tensor is not what the converter writes
             m.tensors.erase("blk.0.attn_q.weight");
             m.tensors.erase("blk.0.attn_k.weight");
             m.tensors.erase("blk.0.attn_v.weight");
             m.tensors["blk.0.attn_qkv.weight"] = {8, 16};
           },
           {"missing tensor 'blk.0.attn_q.weight'", "blk.0.attn_qkv.weight", "nothing would read"}},
          {[&](TinyModel& m) { m.tensors["blk.1.attn_k.weight"] = {8, 8}; },
           {"blk.1.attn_k.weight", "expected [4, 8]"}},
          {[&](TinyModel& m) { m.tensors["blk.0.exp_probs_b.bias"] = {4}; },
           {"blk.0.exp_probs_b.bias", "nothing would read"}},
          {[&](TinyModel& m) { m.tensors["blk.0.attn_q_norm.weight"] = {4}; },
           {"blk.0.attn_q_norm.weight", "nothing would read"}},
          {[&](TinyModel& m) { m.tensors["blk.0.attn_q.bias"] = {8}; },
           {"blk.0.attn_q.bias", "nothing would read"}},
          {[&](TinyModel& m) { m.u32(a + "expert_shared_count", 1); },
           {"blk.0.ffn_up_shexp.weight", "expected [4, 8]"}},
          {[&](TinyModel& m) { m.str(a + "rope.scaling.type", "yarn"); },
           {a + "rope.scaling.type", "not mapped"}},
      };
  expect_refused(tiny_bailing, "bailing_bad_", cases);
}

// Ling 2.0's arch is refused by name (gguf_config.cc says why).
TEST(GgufBailingMoe, Ling2RefusedByName) {
  TinyModel m = tiny_bailing();
  m.str("general.architecture", "bailingmoe2");
  const std::string what = open_error(m, "bailing2");
  EXPECT_NE(what.find("bailingmoe2"), std::string::npos) << what;
  EXPECT_NE(what.find("Ling 2.0"), std::string::npos) << what;
}

}  // namespace
}  // namespace moex::model
