// The llama4 mapping (gguf_config_llama4.cc) on a tiny file written key by key: 4 layers, MoE
// every 2nd (a shared expert each), the 4th NoPE; each defect refused naming the key or
// tensor. gguf_model_test.py compares a twin of the tiny Llama-4 checkpoint (its llama3 RoPE
// as rope_freqs.weight) with the checkpoint and with llama.cpp.
#include <gtest/gtest.h>

#include "model/gguf/gguf_model_test_util.h"

namespace moex::model {
namespace {

using testing_gguf::open_error;
using testing_gguf::expect_refused;
using testing_gguf::RefusalRows;
using testing_gguf::TinyModel;

// hidden 8, 2 heads of 4 (1 KV head), dense FFN 16, 4 experts of 4 top-1 with a shared expert
// of 4, vocabulary 16, an untied head.
TinyModel tiny_llama4() {
  TinyModel m = TinyModel::with_basics("llama4", 4, 1e-5f);
  const std::string a = "llama4.";
  m.u32(a + "rope.dimension_count", 4);
  m.f32(a + "rope.freq_base", 500000.f);
  m.u32(a + "expert_count", 4);
  m.u32(a + "expert_used_count", 1);
  m.u32(a + "feed_forward_length", 16);
  m.u32(a + "expert_feed_forward_length", 4);
  m.u32(a + "interleave_moe_layer_step", 2);
  m.tensors = {{"token_embd.weight", {8, 16}}, {"output_norm.weight", {8}},
               {"output.weight", {8, 16}}};
  for (int i = 0; i < 4; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    for (const auto& [name, ne] : std::map<std::string, std::vector<uint64_t>>{
             {"attn_norm.weight", {8}}, {"ffn_norm.weight", {8}}, {"attn_q.weight", {8, 8}},
             {"attn_k.weight", {8, 4}}, {"attn_v.weight", {8, 4}},
             {"attn_output.weight", {8, 8}}})
      m.tensors[b + name] = ne;
    if (i % 2 == 0) {
      m.tensors[b + "ffn_gate.weight"] = {8, 16};
      m.tensors[b + "ffn_up.weight"] = {8, 16};
      m.tensors[b + "ffn_down.weight"] = {16, 8};
    } else {
      m.tensors[b + "ffn_gate_inp.weight"] = {8, 4};
      m.tensors[b + "ffn_gate_exps.weight"] = {8, 4, 4};
      m.tensors[b + "ffn_up_exps.weight"] = {8, 4, 4};
      m.tensors[b + "ffn_down_exps.weight"] = {4, 8, 4};
      m.tensors[b + "ffn_gate_shexp.weight"] = {8, 4};
      m.tensors[b + "ffn_up_shexp.weight"] = {8, 4};
      m.tensors[b + "ffn_down_shexp.weight"] = {4, 8};
    }
  }
  return m;
}

TEST(GgufLlama4, TinyFileLoadsAsTheLlama4Family) {
  const TinyModel m = tiny_llama4();
  EXPECT_EQ(open_error(m, "llama4"), "");
  const ModelConfig c = load_gguf_model_config(m.write("llama4_cfg"));
  EXPECT_EQ(c.family, "llama4");
  EXPECT_EQ(c.num_layers, 4);
  EXPECT_EQ(c.head_dim, 4);
  EXPECT_EQ(c.dense_dff, 16);
  EXPECT_EQ(c.moe.expert_dff, 4);
  EXPECT_EQ(c.moe.shared_dff, 4);
  EXPECT_EQ(c.attention_chunk_size, 8192);
  EXPECT_TRUE(c.rope.traditional);
  EXPECT_EQ(c.rope.kind, RopeKind::kDefault);  // no rope_freqs.weight: no llama3 scaling
  for (int i = 0; i < 4; ++i) {
    const LayerPlan& l = c.layers[size_t(i)];
    EXPECT_EQ(l.ffn, i % 2 == 1 ? FfnKind::kMoe : FfnKind::kDense) << i;
    EXPECT_EQ(l.use_rope, i != 3) << i;  // every 4th layer NoPE (llama.cpp's step 4)
    EXPECT_EQ(l.chunked_attention, i != 3) << i;
    EXPECT_EQ(l.qk_norm, i != 3) << i;   // 4 experts: llama.cpp's use_kq_norm
    EXPECT_EQ(l.attn_temperature, i == 3) << i;
  }
}

TEST(GgufLlama4, RefusedNamingTheKeyOrTensor) {
  const std::string a = "llama4.";
  const RefusalRows cases = {
          {[&](TinyModel& m) { m.keys.erase(a + "interleave_moe_layer_step"); },
           {a + "interleave_moe_layer_step", "missing"}},
          {[&](TinyModel& m) { m.u32(a + "interleave_moe_layer_step", 1); },
           {"blk.0.ffn_gate_inp.weight", "missing"}},
          {[&](TinyModel& m) { m.u32(a + "expert_used_count", 2); },
           {a + "expert_used_count", "top-1"}},
          {[&](TinyModel& m) { m.u32(a + "attention.sliding_window", 0); },
           {a + "attention.sliding_window", "NoPE"}},
          {[&](TinyModel& m) { m.u32(a + "attention.sliding_window", 4096); },
           {a + "attention.sliding_window", "8192"}},
          {[&](TinyModel& m) { m.u32(a + "attention.sliding_window_pattern", 2); },
           {a + "attention.sliding_window_pattern", "pattern 4"}},
          {[&](TinyModel& m) { m.u32(a + "rope.dimension_count", 2); },
           {a + "rope.dimension_count", "partial RoPE"}},
          {[&](TinyModel& m) { m.tensors["rope_freqs.weight"] = {2}; },
           {"rope_freqs.weight", "finite number >= 1"}},
          {[&](TinyModel& m) { m.tensors["rope_freqs.weight"] = {3}; },
           {"rope_freqs.weight", "expected [2]"}},
          {[&](TinyModel& m) { m.tensors.erase("output.weight"); },
           {"output.weight", "untied"}},
          {[&](TinyModel& m) { m.tensors["blk.1.ffn_up_shexp.weight"] = {8, 8}; },
           {"blk.1.ffn_up_shexp.weight", "expected [4, 8]"}},
          {[&](TinyModel& m) { m.tensors["blk.0.attn_q_norm.weight"] = {4}; },
           {"blk.0.attn_q_norm.weight", "nothing would read"}},
      };
  expect_refused(tiny_llama4, "llama4_bad_", cases);
}

}  // namespace
}  // namespace moex::model
