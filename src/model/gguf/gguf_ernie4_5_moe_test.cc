// The ernie4_5-moe mapping (gguf_config_ernie4_5_moe.cc) on a tiny file written key by key:
// one dense layer then one MoE layer with shared experts, tied embeddings; each defect refused
// naming the key or tensor. gguf_model_test.py compares a twin of the tiny ERNIE-4.5 MoE
// checkpoint with the checkpoint and with llama.cpp.
#include <gtest/gtest.h>

#include "model/gguf/gguf_model_test_util.h"

namespace moex::model {
namespace {

using testing_gguf::open_error;
using testing_gguf::expect_refused;
using testing_gguf::RefusalRows;
using testing_gguf::TinyModel;

// hidden 8, 2 heads of 4 (1 KV head), dense FFN 16, 4 experts of 4, shared width 8 (2 shared
// experts), top-2, vocabulary 16, no output.weight.
TinyModel tiny_ernie() {
  TinyModel m = TinyModel::with_basics("ernie4_5-moe", 2, 1e-5f);
  const std::string a = "ernie4_5-moe.";
  m.f32(a + "rope.freq_base", 500000.f);
  m.u32(a + "expert_count", 4);
  m.u32(a + "expert_used_count", 2);
  m.u32(a + "feed_forward_length", 16);
  m.u32(a + "expert_feed_forward_length", 4);
  m.u32(a + "expert_shared_count", 2);
  m.u32(a + "expert_shared_feed_forward_length", 8);
  m.u32(a + "interleave_moe_layer_step", 1);
  m.u32(a + "leading_dense_block_count", 1);
  m.tensors = {{"token_embd.weight", {8, 16}}, {"output_norm.weight", {8}}};
  for (int i = 0; i < 2; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    for (const auto& [name, ne] : std::map<std::string, std::vector<uint64_t>>{
             {"attn_norm.weight", {8}}, {"ffn_norm.weight", {8}}, {"attn_q.weight", {8, 8}},
             {"attn_k.weight", {8, 4}}, {"attn_v.weight", {8, 4}},
             {"attn_output.weight", {8, 8}}})
      m.tensors[b + name] = ne;
  }
  m.tensors["blk.0.ffn_gate.weight"] = {8, 16};
  m.tensors["blk.0.ffn_up.weight"] = {8, 16};
  m.tensors["blk.0.ffn_down.weight"] = {16, 8};
  m.tensors["blk.1.ffn_gate_inp.weight"] = {8, 4};
  m.tensors["blk.1.ffn_gate_exps.weight"] = {8, 4, 4};
  m.tensors["blk.1.ffn_up_exps.weight"] = {8, 4, 4};
  m.tensors["blk.1.ffn_down_exps.weight"] = {4, 8, 4};
  m.tensors["blk.1.ffn_gate_shexp.weight"] = {8, 8};
  m.tensors["blk.1.ffn_up_shexp.weight"] = {8, 8};
  m.tensors["blk.1.ffn_down_shexp.weight"] = {8, 8};
  return m;
}

TEST(GgufErnie45Moe, TinyFileLoadsAsTheErnieFamily) {
  const TinyModel m = tiny_ernie();
  EXPECT_EQ(open_error(m, "ernie"), "");
  const ModelConfig c = load_gguf_model_config(m.write("ernie_cfg"));
  EXPECT_EQ(c.family, "ernie4_5_moe");
  EXPECT_EQ(c.num_layers, 2);
  EXPECT_EQ(c.head_dim, 4);
  EXPECT_EQ(c.dense_dff, 16);
  EXPECT_EQ(c.moe.expert_dff, 4);
  EXPECT_EQ(c.moe.shared_dff, 8);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.layers[0].ffn, FfnKind::kDense);
  EXPECT_EQ(c.layers[1].ffn, FfnKind::kMoe);
  // No shared experts: none in the config, and the MoE layer reads no ffn_*_shexp.
  TinyModel plain = tiny_ernie();
  plain.keys.erase("ernie4_5-moe.expert_shared_feed_forward_length");
  for (const char* t : {"gate", "up", "down"})
    plain.tensors.erase(std::string("blk.1.ffn_") + t + "_shexp.weight");
  EXPECT_EQ(open_error(plain, "ernie_noshared"), "");
  EXPECT_EQ(load_gguf_model_config(plain.write("ernie_noshared_cfg")).moe.shared_dff, 0);
}

// exp_probs_b (the converter's name for moe_statics.e_score_correction_bias, of checkpoints with
// moe_use_aux_free): the family's biased selection, which llama.cpp's graph runs too; the
// Hugging Face parameter's [1, E] as the converter writes it, or [E].
TEST(GgufErnie45Moe, CorrectionBiasSelectsWithSoftmaxScores) {
  for (const std::vector<uint64_t>& ne : {std::vector<uint64_t>{4}, std::vector<uint64_t>{4, 1}}) {
    TinyModel m = tiny_ernie();
    m.tensors["blk.1.exp_probs_b.bias"] = ne;
    EXPECT_EQ(open_error(m, "ernie_bias"), "") << ne.size();
    const ModelConfig c = load_gguf_model_config(m.write("ernie_bias_cfg"));
    EXPECT_TRUE(c.moe.use_expert_bias);
    EXPECT_EQ(c.moe.router.rule, moe::RoutingRule::kSigmoidBiasTopK);
    EXPECT_TRUE(c.moe.router.softmax_scores);
    EXPECT_TRUE(c.moe.router.renormalize);
    EXPECT_TRUE(c.layers[0].names.expert_bias.empty());
    EXPECT_FALSE(c.layers[1].names.expert_bias.empty());
  }
  const ModelConfig plain = load_gguf_model_config(tiny_ernie().write("ernie_plain_cfg"));
  EXPECT_FALSE(plain.moe.use_expert_bias);
  EXPECT_EQ(plain.moe.router.rule, moe::RoutingRule::kSoftmaxTopK);
}

TEST(GgufErnie45Moe, RefusedNamingTheKeyOrTensor) {
  const std::string a = "ernie4_5-moe.";
  const RefusalRows cases = {
          {[&](TinyModel& m) { m.keys.erase(a + "interleave_moe_layer_step"); },
           {a + "interleave_moe_layer_step", "missing"}},
          {[&](TinyModel& m) { m.u32(a + "interleave_moe_layer_step", 0); },
           {a + "interleave_moe_layer_step", "[1, 2]"}},
          {[&](TinyModel& m) { m.u32(a + "leading_dense_block_count", 2); },
           {a + "leading_dense_block_count", "[0, 1]"}},
          {[&](TinyModel& m) { m.u32(a + "expert_shared_feed_forward_length", 6); },
           {a + "expert_shared_feed_forward_length", "multiple", "(4)"}},
          {[&](TinyModel& m) { m.keys.erase(a + "expert_feed_forward_length"); },
           {a + "expert_feed_forward_length", "missing"}},
          {[&](TinyModel& m) { m.tensors["blk.0.exp_probs_b.bias"] = {4}; },  // dense layer
           {"missing tensor 'blk.1.exp_probs_b.bias'", "blk.0.exp_probs_b.bias",
            "nothing would read"}},
          {[&](TinyModel& m) { m.tensors["blk.1.exp_probs_b.bias"] = {5}; },
           {"blk.1.exp_probs_b.bias", "expected [4]"}},
          {[&](TinyModel& m) { m.tensors["blk.1.exp_probs_b.bias"] = {4, 2}; },
           {"blk.1.exp_probs_b.bias", "expected [4]"}},
          {[&](TinyModel& m) { m.tensors["blk.1.ffn_up_shexp.weight"] = {8, 4}; },
           {"blk.1.ffn_up_shexp.weight", "expected [8, 8]"}},
          {[&](TinyModel& m) { m.tensors["blk.0.attn_output.bias"] = {8}; },
           {"blk.0.attn_output.bias", "nothing would read"}},
      };
  expect_refused(tiny_ernie, "ernie_bad_", cases);
}

}  // namespace
}  // namespace moex::model
