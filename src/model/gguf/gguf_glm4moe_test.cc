// The glm4moe mapping (gguf_config.cc glm4moe, the names that differ by arch, the NextN layers
// that are skipped) on a tiny file written key by key: one dense layer then one MoE layer with
// a shared expert, exp_probs_b, q/k/v biases, q/k norms and partial RoPE; each defect refused
// naming the key or tensor. gguf_model_test.py compares a twin of a real tiny checkpoint with
// the checkpoint and with llama.cpp.
#include <gtest/gtest.h>

#include "model/gguf/gguf_model_test_util.h"

namespace moex::model {
namespace {

using testing_gguf::open_error;
using testing_gguf::expect_refused;
using testing_gguf::RefusalRows;
using testing_gguf::TinyModel;

// hidden 8, 2 heads of 4 (1 KV head), RoPE over 2 of 4 dims, dense FFN 16, 2 experts of 4
// plus 1 shared, top-2, vocabulary 16.
TinyModel tiny_glm() {
  TinyModel m = TinyModel::with_basics("glm4moe", 2, 1e-5f);
  m.u32("glm4moe.attention.key_length", 4);
  m.u32("glm4moe.rope.dimension_count", 2);
  m.u32("glm4moe.expert_count", 2);
  m.u32("glm4moe.expert_used_count", 2);
  m.u32("glm4moe.expert_shared_count", 1);
  m.u32("glm4moe.feed_forward_length", 16);
  m.u32("glm4moe.expert_feed_forward_length", 4);
  m.u32("glm4moe.leading_dense_block_count", 1);
  m.u32("glm4moe.expert_gating_func", 2);
  m.f32("glm4moe.expert_weights_scale", 2.5f);
  m.boolean("glm4moe.expert_weights_norm", true);
  m.tensors = {{"token_embd.weight", {8, 16}}, {"output_norm.weight", {8}},
               {"output.weight", {8, 16}}};
  for (int i = 0; i < 2; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    for (const auto& [name, ne] : std::map<std::string, std::vector<uint64_t>>{
             {"attn_norm.weight", {8}}, {"post_attention_norm.weight", {8}},
             {"attn_q.weight", {8, 8}}, {"attn_q.bias", {8}}, {"attn_k.weight", {8, 4}},
             {"attn_k.bias", {4}}, {"attn_v.weight", {8, 4}}, {"attn_v.bias", {4}},
             {"attn_output.weight", {8, 8}}, {"attn_q_norm.weight", {4}},
             {"attn_k_norm.weight", {4}}})
      m.tensors[b + name] = ne;
  }
  m.tensors["blk.0.ffn_gate.weight"] = {8, 16};
  m.tensors["blk.0.ffn_up.weight"] = {8, 16};
  m.tensors["blk.0.ffn_down.weight"] = {16, 8};
  m.tensors["blk.1.ffn_gate_inp.weight"] = {8, 2};
  m.tensors["blk.1.exp_probs_b.bias"] = {2};
  m.tensors["blk.1.ffn_gate_exps.weight"] = {8, 4, 2};
  m.tensors["blk.1.ffn_up_exps.weight"] = {8, 4, 2};
  m.tensors["blk.1.ffn_down_exps.weight"] = {4, 8, 2};
  m.tensors["blk.1.ffn_gate_shexp.weight"] = {8, 4};
  m.tensors["blk.1.ffn_up_shexp.weight"] = {8, 4};
  m.tensors["blk.1.ffn_down_shexp.weight"] = {4, 8};
  return m;
}

TEST(GgufGlm4Moe, TinyFileLoadsAsTheGlmFamily) {
  const TinyModel m = tiny_glm();
  EXPECT_EQ(open_error(m, "glm"), "");
  const ModelConfig c = load_gguf_model_config(m.write("glm_cfg"));
  EXPECT_EQ(c.family, "glm4_moe");
  EXPECT_EQ(c.num_layers, 2);
  EXPECT_EQ(c.head_dim, 4);
  EXPECT_EQ(c.rope.dims, 2);
  EXPECT_TRUE(c.q_bias && c.k_bias && c.v_bias);
  EXPECT_EQ(c.qk_norm, QkNormKind::kPerHead);
  EXPECT_EQ(c.dense_dff, 16);
  EXPECT_EQ(c.moe.expert_dff, 4);
  EXPECT_EQ(c.moe.shared_dff, 4);
  EXPECT_FLOAT_EQ(c.moe.router.routed_scaling, 2.5f);
  EXPECT_TRUE(c.moe.router.renormalize);
  EXPECT_EQ(c.layers[0].ffn, FfnKind::kDense);
  EXPECT_EQ(c.layers[1].ffn, FfnKind::kMoe);
}

TEST(GgufGlm4Moe, NextNLayersAreSkipped) {
  TinyModel m = tiny_glm();
  m.u32("glm4moe.block_count", 3);
  m.u32("glm4moe.nextn_predict_layers", 1);
  for (const auto& [name, ne] : tiny_glm().tensors)
    if (name.rfind("blk.1.", 0) == 0) m.tensors["blk.2." + name.substr(6)] = ne;
  m.tensors["blk.2.nextn.eh_proj.weight"] = {16, 8};
  m.tensors["blk.2.nextn.enorm.weight"] = {8};
  EXPECT_EQ(open_error(m, "glm_nextn"), "");
  EXPECT_EQ(load_gguf_model_config(m.write("glm_nextn_cfg")).num_layers, 2);
  // Asked for (--spec mtp), a module without all its tensors is refused naming the first
  // missing one and where llama.cpp keeps the module.
  CheckOptions with_mtp;
  with_mtp.mtp_module = true;
  try {
    (void)open_gguf_model_checkpoint(m.write("glm_nextn_mtp"), with_mtp);
    ADD_FAILURE() << "a module without hnorm opened";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("model.layers.2.hnorm.weight"), std::string::npos) << what;
    EXPECT_NE(what.find("blk.2.nextn"), std::string::npos) << what;
  }
  // A layer beyond the NextN ones is still an error.
  m.tensors["blk.3.attn_norm.weight"] = {8};
  EXPECT_NE(open_error(m, "glm_nextn_extra").find("blk.3.attn_norm.weight"), std::string::npos);
}

TEST(GgufGlm4Moe, RefusedNamingTheKeyOrTensor) {
  const RefusalRows cases = {
          {[](TinyModel& m) { m.u32("glm4moe.expert_gating_func", 1); },
           {"glm4moe.expert_gating_func", "sigmoid"}},
          {[](TinyModel& m) { m.u32("glm4moe.expert_group_count", 3); },
           {"glm4moe.expert_group_count"}},
          {[](TinyModel& m) { m.u32("glm4moe.nextn_predict_layers", 2); },
           {"glm4moe.nextn_predict_layers", "[0, 1]"}},
          {[](TinyModel& m) { m.u32("glm4moe.rope.dimension_count", 3); },
           {"glm4moe.rope.dimension_count"}},
          {[](TinyModel& m) { m.f32("glm4moe.expert_weights_scale", -1.f); },
           {"glm4moe.expert_weights_scale"}},
          {[](TinyModel& m) { m.tensors.erase("blk.1.exp_probs_b.bias"); },
           {"missing tensor 'blk.1.exp_probs_b.bias'"}},
          {[](TinyModel& m) { m.tensors["blk.1.exp_probs_b.bias"] = {3}; },
           {"blk.1.exp_probs_b.bias", "expected [2]"}},
          {[](TinyModel& m) { m.tensors.erase("blk.0.post_attention_norm.weight"); },
           {"missing tensor 'blk.0.post_attention_norm.weight'"}},
          {[](TinyModel& m) { m.tensors.erase("output.weight"); },
           {"output.weight", "untied"}},
      };
  expect_refused(tiny_glm, "glm_bad_", cases);
}

}  // namespace
}  // namespace moex::model
