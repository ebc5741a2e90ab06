// The granitemoe mapping (gguf_config_granitemoe.cc) on a tiny file written key by key: two
// MoE layers with q/k/v/o biases, the four muP multipliers, tied embeddings; each defect
// refused naming the key or tensor. gguf_model_test.py compares a twin of the tiny Granite MoE
// checkpoint (its q/k rows and biases permuted as llama.cpp's converter does) with the
// checkpoint and with llama.cpp.
#include <gtest/gtest.h>

#include <cmath>

#include "model/gguf/gguf_model_test_util.h"

namespace moex::model {
namespace {

using testing_gguf::open_error;
using testing_gguf::expect_refused;
using testing_gguf::RefusalRows;
using testing_gguf::TinyModel;

// hidden 8, 2 heads of 4 (1 KV head), 4 experts of 4, top-2, vocabulary 16.
TinyModel tiny_granite() {
  TinyModel m = TinyModel::with_basics("granitemoe", 2, 1e-6f);
  const std::string a = "granitemoe.";
  m.u32(a + "expert_count", 4);
  m.u32(a + "expert_used_count", 2);
  m.u32(a + "feed_forward_length", 4);
  m.f32(a + "attention.scale", 0.1f);
  m.f32(a + "embedding_scale", 12.f);
  m.f32(a + "residual_scale", 0.22f);
  m.f32(a + "logit_scale", 6.f);
  m.tensors = {{"token_embd.weight", {8, 16}}, {"output_norm.weight", {8}}};
  for (int i = 0; i < 2; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    for (const auto& [name, ne] : std::map<std::string, std::vector<uint64_t>>{
             {"attn_norm.weight", {8}}, {"ffn_norm.weight", {8}}, {"attn_q.weight", {8, 8}},
             {"attn_q.bias", {8}}, {"attn_k.weight", {8, 4}}, {"attn_k.bias", {4}},
             {"attn_v.weight", {8, 4}}, {"attn_v.bias", {4}}, {"attn_output.weight", {8, 8}},
             {"attn_output.bias", {8}}, {"ffn_gate_inp.weight", {8, 4}},
             {"ffn_gate_exps.weight", {8, 4, 4}}, {"ffn_up_exps.weight", {8, 4, 4}},
             {"ffn_down_exps.weight", {4, 8, 4}}})
      m.tensors[b + name] = ne;
  }
  return m;
}

TEST(GgufGraniteMoe, TinyFileLoadsAsTheGraniteFamily) {
  const TinyModel m = tiny_granite();
  EXPECT_EQ(open_error(m, "granite"), "");
  const ModelConfig c = load_gguf_model_config(m.write("granite_cfg"));
  EXPECT_EQ(c.family, "granitemoe");
  EXPECT_EQ(c.num_layers, 2);
  EXPECT_EQ(c.head_dim, 4);
  EXPECT_EQ(c.moe.expert_dff, 4);
  EXPECT_TRUE(c.q_bias && c.k_bias && c.v_bias && c.o_bias);
  EXPECT_TRUE(c.tie_word_embeddings);
  // The float32 keys read back as the decimals written (0.22f -> 0.22).
  EXPECT_DOUBLE_EQ(c.attn_scale, 0.1);
  EXPECT_DOUBLE_EQ(c.embedding_scale, 12.0);
  EXPECT_DOUBLE_EQ(c.residual_scale, 0.22);
  EXPECT_DOUBLE_EQ(c.logits_divisor, 6.0);
  // Absent optional multipliers: no scaling, and head_dim^-1/2 (llama.cpp's defaults).
  TinyModel plain = tiny_granite();
  for (const char* key : {"attention.scale", "embedding_scale", "residual_scale"})
    plain.keys.erase(std::string("granitemoe.") + key);
  const ModelConfig p = load_gguf_model_config(plain.write("granite_plain_cfg"));
  EXPECT_DOUBLE_EQ(p.attn_scale, 0.5);
  EXPECT_DOUBLE_EQ(p.embedding_scale, 1.0);
  EXPECT_DOUBLE_EQ(p.residual_scale, 1.0);
}

TEST(GgufGraniteMoe, RefusedNamingTheKeyOrTensor) {
  const std::string a = "granitemoe.";
  const RefusalRows cases = {
          {[&](TinyModel& m) { m.keys.erase(a + "logit_scale"); },
           {a + "logit_scale", "missing"}},
          {[&](TinyModel& m) { m.f32(a + "logit_scale", 0.f); }, {a + "logit_scale"}},
          {[&](TinyModel& m) { m.f32(a + "residual_scale", -1.f); },
           {a + "residual_scale", ">= 0"}},
          {[&](TinyModel& m) { m.f32(a + "attention.scale", INFINITY); },
           {a + "attention.scale"}},
          {[&](TinyModel& m) { m.u32(a + "expert_shared_feed_forward_length", 8); },
           {a + "expert_shared_feed_forward_length", "GraniteMoeShared"}},
          {[&](TinyModel& m) { m.u32(a + "attention.key_length", 8); },
           {a + "attention.key_length", "embedding_length / head_count"}},
          {[&](TinyModel& m) { m.tensors.erase("blk.1.attn_v.bias"); },
           {"missing tensor 'blk.1.attn_v.bias'"}},
          {[&](TinyModel& m) { m.tensors["blk.0.ffn_gate_shexp.weight"] = {8, 8}; },
           {"blk.0.ffn_gate_shexp.weight", "nothing would read"}},
      };
  expect_refused(tiny_granite, "granite_bad_", cases);
}

}  // namespace
}  // namespace moex::model
