// The hunyuan-moe mapping (gguf_config_hunyuan_moe.cc) on a tiny file written key by key: it
// loads as moex's hunyuan family with the top-k renormalized (as llama.cpp's graph does) and the
// base of the file's rope.freq_base; each defect is refused naming the key or tensor.
// gguf_model_test.py compares a twin of the tiny Hunyuan checkpoint with the checkpoint and
// with llama.cpp.
#include <gtest/gtest.h>

#include "model/gguf/gguf_model_test_util.h"

namespace moex::model {
namespace {

using testing_gguf::open_error;
using testing_gguf::expect_refused;
using testing_gguf::RefusalRows;
using testing_gguf::TinyModel;

// hidden 8, 2 heads of 4 (1 KV head), 2 layers, 4 experts of 4 (feed_forward_length, as
// llama.cpp sizes them), top-2, a shared MLP of 16, q/k norms, tied embeddings, vocabulary 16.
TinyModel tiny_hunyuan() {
  TinyModel m = TinyModel::with_basics("hunyuan-moe", 2, 1e-5f);
  const std::string a = "hunyuan-moe.";
  m.f32(a + "rope.freq_base", 11158840.f);
  m.str(a + "rope.scaling.type", "none");
  m.f32(a + "rope.scaling.factor", 1.f);
  m.u32(a + "expert_count", 4);
  m.u32(a + "expert_used_count", 2);
  m.u32(a + "expert_shared_count", 1);
  m.u32(a + "feed_forward_length", 4);
  m.u32(a + "expert_shared_feed_forward_length", 16);
  m.u32(a + "expert_feed_forward_length", 4);
  m.tensors = {{"token_embd.weight", {8, 16}}, {"output_norm.weight", {8}}};
  for (int i = 0; i < 2; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    for (const auto& [name, ne] : std::map<std::string, std::vector<uint64_t>>{
             {"attn_norm.weight", {8}}, {"ffn_norm.weight", {8}}, {"attn_q.weight", {8, 8}},
             {"attn_k.weight", {8, 4}}, {"attn_v.weight", {8, 4}},
             {"attn_output.weight", {8, 8}}, {"attn_q_norm.weight", {4}},
             {"attn_k_norm.weight", {4}}, {"ffn_gate_inp.weight", {8, 4}},
             {"ffn_gate_exps.weight", {8, 4, 4}}, {"ffn_up_exps.weight", {8, 4, 4}},
             {"ffn_down_exps.weight", {4, 8, 4}}, {"ffn_gate_shexp.weight", {8, 16}},
             {"ffn_up_shexp.weight", {8, 16}}, {"ffn_down_shexp.weight", {16, 8}}})
      m.tensors[b + name] = ne;
  }
  return m;
}

TEST(GgufHunyuanMoe, TinyFileLoadsAsTheHunyuanFamilyRenormalized) {
  const TinyModel m = tiny_hunyuan();
  EXPECT_EQ(open_error(m, "hunyuan"), "");
  const ModelConfig c = load_gguf_model_config(m.write("hunyuan_cfg"));
  EXPECT_EQ(c.family, "hunyuan");
  EXPECT_EQ(c.head_dim, 4);
  EXPECT_EQ(c.qk_norm, QkNormKind::kPerHeadAfterRope);
  EXPECT_FALSE(c.q_bias || c.o_bias);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.rope.theta, double(11158840.f));  // the file's base as it is (alpha 1)
  EXPECT_EQ(c.moe.expert_dff, 4);
  EXPECT_EQ(c.moe.shared_dff, 16);
  EXPECT_TRUE(c.moe.router.renormalize);  // llama.cpp's norm_w = true
  EXPECT_TRUE(c.moe.router.softmax_scores || c.moe.router.rule == moe::RoutingRule::kSoftmaxTopK);
}

TEST(GgufHunyuanMoe, RefusedNamingTheKeyOrTensor) {
  const std::string a = "hunyuan-moe.";
  const RefusalRows cases = {
          {[&](TinyModel& m) { m.keys.erase(a + "feed_forward_length"); },
           {a + "feed_forward_length", "missing"}},
          {[&](TinyModel& m) { m.u32(a + "expert_feed_forward_length", 8); },
           {a + "expert_feed_forward_length", "feed_forward_length (4)"}},
          {[&](TinyModel& m) {
             m.u32(a + "expert_count", 1);
             m.u32(a + "expert_used_count", 1);
           },
           {a + "expert_count", "[2, "}},
          {[&](TinyModel& m) { m.u32(a + "expert_shared_feed_forward_length", 12); },
           {"blk.0.ffn_up_shexp.weight", "expected [12, 8]"}},
          {[&](TinyModel& m) { m.str(a + "rope.scaling.type", "yarn"); },
           {a + "rope.scaling.type", "not mapped"}},
          {[&](TinyModel& m) { m.u32(a + "attention.key_length", 2); },
           {a + "attention.key_length", "embedding_length / head_count"}},
          {[&](TinyModel& m) { m.tensors["output.weight"] = {8, 16}; },
           {"output.weight", "present", "token embedding"}},
          {[&](TinyModel& m) { m.tensors.erase("blk.1.attn_k_norm.weight"); },
           {"missing tensor 'blk.1.attn_k_norm.weight'"}},
          {[&](TinyModel& m) { m.tensors["blk.0.attn_output.bias"] = {8}; },
           {"blk.0.attn_output.bias", "nothing would read"}},
          {[&](TinyModel& m) { m.f32(a + "expert_weights_scale", 2.f); },
           {a + "expert_weights_scale"}},
      };
  expect_refused(tiny_hunyuan, "hunyuan_bad_", cases);
}

}  // namespace
}  // namespace moex::model
