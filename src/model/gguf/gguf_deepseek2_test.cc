// The deepseek2 and gpt-oss mappings (gguf_config_deepseek2.cc, gguf_config_gpt_oss.cc) on tiny
// files written key by key: each loads as its moex family (deepseek2 as deepseek_v2, or with
// sigmoid gating as deepseek_v3) with the settings its keys give, and each key that can be
// wrong is refused naming the key (or the tensor). gguf_model_test.py
// compares twins of real tiny checkpoints with the checkpoints and with llama.cpp.
#include <gtest/gtest.h>

#include "model/gguf/gguf_model_test_util.h"

namespace moex::model {
namespace {

using testing_gguf::expect_refused;
using testing_gguf::open_error;
using testing_gguf::TinyModel;

// hidden 8, 2 heads; MLA with q LoRA 4, latent 4, nope 2 + rope 2, v 2; a dense first layer
// (FFN 16), then 2 experts of 4, top-1, one shared; YaRN factor 4; vocabulary 16.
TinyModel tiny_ds2() {
  TinyModel m = TinyModel::with_basics("deepseek2", 2, 1e-6f);
  const std::string a = "deepseek2.";
  m.u32(a + "expert_count", 2);
  m.u32(a + "expert_used_count", 1);
  m.u32(a + "expert_shared_count", 1);
  m.u32(a + "feed_forward_length", 16);
  m.u32(a + "expert_feed_forward_length", 4);
  m.u32(a + "leading_dense_block_count", 1);
  m.u32(a + "attention.q_lora_rank", 4);
  m.u32(a + "attention.kv_lora_rank", 4);
  m.u32(a + "attention.key_length", 6);
  m.u32(a + "attention.value_length", 4);
  m.u32(a + "attention.key_length_mla", 4);
  m.u32(a + "attention.value_length_mla", 2);
  m.u32(a + "rope.dimension_count", 2);
  m.u32(a + "expert_gating_func", 1);
  m.f32(a + "expert_weights_scale", 1.5f);
  m.str(a + "rope.scaling.type", "yarn");
  m.f32(a + "rope.scaling.factor", 4.f);
  m.u32(a + "rope.scaling.original_context_length", 32);
  m.f32(a + "rope.scaling.yarn_log_multiplier", 0.08f);
  m.tensors = {{"token_embd.weight", {8, 16}}, {"output_norm.weight", {8}},
               {"output.weight", {8, 16}}};
  for (int i = 0; i < 2; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    for (const auto& [name, ne] : std::map<std::string, std::vector<uint64_t>>{
             {"attn_norm.weight", {8}}, {"ffn_norm.weight", {8}}, {"attn_q_a.weight", {8, 4}},
             {"attn_q_a_norm.weight", {4}}, {"attn_q_b.weight", {4, 8}},
             {"attn_kv_a_mqa.weight", {8, 6}}, {"attn_kv_a_norm.weight", {4}},
             {"attn_k_b.weight", {2, 4, 2}}, {"attn_v_b.weight", {4, 2, 2}},
             {"attn_output.weight", {4, 8}}})
      m.tensors[b + name] = ne;
  }
  m.tensors["blk.0.ffn_gate.weight"] = {8, 16};
  m.tensors["blk.0.ffn_up.weight"] = {8, 16};
  m.tensors["blk.0.ffn_down.weight"] = {16, 8};
  m.tensors["blk.1.ffn_gate_inp.weight"] = {8, 2};
  m.tensors["blk.1.ffn_gate_exps.weight"] = {8, 4, 2};
  m.tensors["blk.1.ffn_up_exps.weight"] = {8, 4, 2};
  m.tensors["blk.1.ffn_down_exps.weight"] = {4, 8, 2};
  m.tensors["blk.1.ffn_gate_shexp.weight"] = {8, 4};
  m.tensors["blk.1.ffn_up_shexp.weight"] = {8, 4};
  m.tensors["blk.1.ffn_down_shexp.weight"] = {4, 8};
  return m;
}

// tiny_ds2 as DeepSeek-V3 (llama.cpp's deepseek2 with sigmoid gating): 4 experts of 4 in 2
// groups (1 kept), top-2 renormalized and scaled 2.5, exp_probs_b the correction bias.
TinyModel tiny_ds3() {
  TinyModel m = tiny_ds2();
  const std::string a = "deepseek2.";
  m.u32(a + "expert_gating_func", 2);
  m.u32(a + "expert_count", 4);
  m.u32(a + "expert_used_count", 2);
  m.u32(a + "expert_group_count", 2);
  m.u32(a + "expert_group_used_count", 1);
  m.boolean(a + "expert_weights_norm", true);
  m.f32(a + "expert_weights_scale", 2.5f);
  m.tensors["blk.1.ffn_gate_inp.weight"] = {8, 4};
  m.tensors["blk.1.exp_probs_b.bias"] = {4};
  m.tensors["blk.1.ffn_gate_exps.weight"] = {8, 4, 4};
  m.tensors["blk.1.ffn_up_exps.weight"] = {8, 4, 4};
  m.tensors["blk.1.ffn_down_exps.weight"] = {4, 8, 4};
  return m;
}

// hidden 8, 2 heads of 4 (1 KV head), 2 layers (sliding window 4, then full), 2 experts of 4,
// top-2, YaRN factor 32; vocabulary 16.
TinyModel tiny_oss() {
  TinyModel m = TinyModel::with_basics("gpt-oss", 2, 1e-5f);
  const std::string a = "gpt-oss.";
  m.u32(a + "attention.key_length", 4);
  m.u32(a + "attention.value_length", 4);
  m.f32(a + "rope.freq_base", 150000.f);
  m.u32(a + "expert_count", 2);
  m.u32(a + "expert_used_count", 2);
  m.u32(a + "feed_forward_length", 4);
  m.u32(a + "expert_feed_forward_length", 4);
  m.u32(a + "attention.sliding_window", 4);
  m.str(a + "rope.scaling.type", "yarn");
  m.f32(a + "rope.scaling.factor", 32.f);
  m.u32(a + "rope.scaling.original_context_length", 16);
  m.tensors = {{"token_embd.weight", {8, 16}}, {"output_norm.weight", {8}},
               {"output.weight", {8, 16}}};
  for (int i = 0; i < 2; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    for (const auto& [name, ne] : std::map<std::string, std::vector<uint64_t>>{
             {"attn_norm.weight", {8}}, {"post_attention_norm.weight", {8}},
             {"attn_q.weight", {8, 8}}, {"attn_q.bias", {8}}, {"attn_k.weight", {8, 4}},
             {"attn_k.bias", {4}}, {"attn_v.weight", {8, 4}}, {"attn_v.bias", {4}},
             {"attn_output.weight", {8, 8}}, {"attn_output.bias", {8}},
             {"attn_sinks.weight", {2}}, {"ffn_gate_inp.weight", {8, 2}},
             {"ffn_gate_inp.bias", {2}}, {"ffn_gate_exps.weight", {8, 4, 2}},
             {"ffn_gate_exps.bias", {4, 2}}, {"ffn_up_exps.weight", {8, 4, 2}},
             {"ffn_up_exps.bias", {4, 2}}, {"ffn_down_exps.weight", {4, 8, 2}},
             {"ffn_down_exps.bias", {8, 2}}})
      m.tensors[b + name] = ne;
  }
  return m;
}

TEST(GgufDeepseek2, TinyFileLoadsAsTheDeepseekV2Family) {
  const TinyModel m = tiny_ds2();
  EXPECT_EQ(open_error(m, "ds2"), "");
  const ModelConfig c = load_gguf_model_config(m.write("ds2_cfg"));
  EXPECT_EQ(c.family, "deepseek_v2");
  EXPECT_EQ(c.heads, 2);
  EXPECT_EQ(c.mla.q_lora_rank, 4);
  EXPECT_EQ(c.mla.kv_lora_rank, 4);
  EXPECT_EQ(c.mla.nope_dim, 2);
  EXPECT_EQ(c.mla.rope_dim, 2);
  EXPECT_EQ(c.mla.v_head_dim, 2);
  EXPECT_EQ(c.layers[0].ffn, FfnKind::kDense);
  EXPECT_EQ(c.layers[1].ffn, FfnKind::kMoe);
  EXPECT_EQ(c.moe.shared_dff, 4);
  EXPECT_FLOAT_EQ(c.moe.router.routed_scaling, 1.5f);
  EXPECT_FALSE(c.moe.router.renormalize);
  EXPECT_TRUE(c.moe.router.softmax_scores);
  // The MLA layout's attn_k_b / attn_v_b are embed_q / unembed_out.
  EXPECT_EQ(c.layers[1].names.mla_embed_q, "model.layers.1.self_attn.embed_q");
  EXPECT_EQ(c.rope.kind, RopeKind::kYarn);
  EXPECT_EQ(c.rope.factor, 4.0);
  EXPECT_EQ(c.rope.original_max_position, 32);
  EXPECT_EQ(c.rope.mscale_all_dim, 0.8);  // 0.08f read back as the decimal 0.08, times 10
  EXPECT_EQ(c.rope.mscale, c.rope.mscale_all_dim);
}

TEST(GgufDeepseek2, OlderFilesWithOneKvBLoad) {
  TinyModel m = tiny_ds2();
  m.keys.erase("deepseek2.attention.key_length_mla");
  m.keys.erase("deepseek2.attention.value_length_mla");
  m.u32("deepseek2.attention.key_length", 4);
  m.u32("deepseek2.attention.value_length", 2);
  for (const std::string b : {"blk.0.", "blk.1."}) {
    m.tensors.erase(b + "attn_k_b.weight");
    m.tensors.erase(b + "attn_v_b.weight");
    m.tensors[b + "attn_kv_b.weight"] = {4, 8};
  }
  m.keys.erase("deepseek2.attention.q_lora_rank");  // V2-Lite: q_proj
  for (const std::string b : {"blk.0.", "blk.1."}) {
    for (const char* t : {"attn_q_a.weight", "attn_q_a_norm.weight", "attn_q_b.weight"})
      m.tensors.erase(b + t);
    m.tensors[b + "attn_q.weight"] = {8, 8};
  }
  EXPECT_EQ(open_error(m, "ds2_legacy"), "");
  const ModelConfig c = load_gguf_model_config(m.write("ds2_legacy_cfg"));
  EXPECT_EQ(c.mla.q_lora_rank, 0);
  EXPECT_TRUE(c.layers[1].names.mla_embed_q.empty());
}

TEST(GgufDeepseek2, RefusedNamingTheKeyOrTensor) {
  const std::string a = "deepseek2.";
  expect_refused(tiny_ds2, "ds2_bad_", {
      {[&](TinyModel& m) { m.u32(a + "expert_gating_func", 4); },
       {a + "expert_gating_func", "softmax (1", "sigmoid (2"}},
      {[&](TinyModel& m) { m.u32(a + "expert_gating_func", 5); },
       {a + "expert_gating_func", "[0, 4]"}},
      {[&](TinyModel& m) { m.u32(a + "attention.key_length_mla", 2); },
       {a + "attention.key_length_mla", "rope.dimension_count"}},
      {[&](TinyModel& m) { m.u32(a + "attention.key_length", 5); },
       {a + "attention.key_length", "kv_lora_rank"}},
      {[&](TinyModel& m) { m.u32(a + "attention.value_length", 3); },
       {a + "attention.value_length"}},
      {[&](TinyModel& m) { m.u32(a + "rope.dimension_count", 3); },
       {a + "rope.dimension_count", "even"}},
      {[&](TinyModel& m) {
         m.u32(a + "expert_used_count", 2);
         m.boolean(a + "expert_weights_norm", true);
       },
       {a + "expert_weights_norm"}},
      {[&](TinyModel& m) { m.u32(a + "expert_group_count", 3); }, {a + "expert_group_count"}},
      {[&](TinyModel& m) { m.u32(a + "expert_group_used_count", 2); },
       {a + "expert_group_used_count"}},
      {[&](TinyModel& m) { m.u32(a + "leading_dense_block_count", 3); },
       {a + "leading_dense_block_count", "[0, 2]"}},
      {[&](TinyModel& m) { m.u32(a + "attention.kv_lora_rank", 0); },
       {a + "attention.kv_lora_rank"}},
      {[&](TinyModel& m) { m.keys.erase(a + "expert_shared_count"); },
       {a + "expert_shared_count", "missing"}},
      {[&](TinyModel& m) { m.f32(a + "expert_weights_scale", -2.f); },
       {a + "expert_weights_scale"}},
      {[&](TinyModel& m) { m.str(a + "rope.scaling.type", "linear"); },
       {a + "rope.scaling.type", "yarn"}},
      {[&](TinyModel& m) { m.keys.erase(a + "rope.scaling.yarn_log_multiplier"); },
       {a + "rope.scaling.yarn_log_multiplier", "missing"}},
      {[&](TinyModel& m) { m.f32(a + "rope.scaling.yarn_log_multiplier", -1.f); },
       {a + "rope.scaling.yarn_log_multiplier"}},
      {[&](TinyModel& m) { m.f32(a + "rope.scaling.factor", 0.5f); },
       {a + "rope.scaling.factor"}},
      {[&](TinyModel& m) { m.f32(a + "rope.scaling.yarn_ext_factor", 0.5f); },
       {a + "rope.scaling.yarn_ext_factor"}},
      {[&](TinyModel& m) { m.tensors.erase("blk.1.attn_k_b.weight"); },
       {"missing tensor 'blk.1.attn_k_b.weight'"}},
      // kv_b's key rows not transposed: [heads, nope, latent]
      {[&](TinyModel& m) { m.tensors["blk.1.attn_k_b.weight"] = {4, 2, 2}; },
       {"blk.1.attn_k_b.weight", "[2, 4, 2]"}},
      {[&](TinyModel& m) { m.tensors["blk.1.exp_probs_b.bias"] = {2}; },
       {"blk.1.exp_probs_b.bias", "not part of"}},
      {[&](TinyModel& m) { m.tensors.erase("output.weight"); }, {"output.weight", "untied"}},
  });
}

TEST(GgufDeepseek2, SigmoidGatedFileLoadsAsTheDeepseekV3Family) {
  const TinyModel m = tiny_ds3();
  EXPECT_EQ(open_error(m, "ds3"), "");
  const ModelConfig c = load_gguf_model_config(m.write("ds3_cfg"));
  EXPECT_EQ(c.family, "deepseek_v3");
  EXPECT_EQ(c.mla.q_lora_rank, 4);
  EXPECT_EQ(c.mla.nope_dim, 2);
  EXPECT_EQ(c.layers[0].ffn, FfnKind::kDense);
  EXPECT_EQ(c.layers[1].ffn, FfnKind::kMoe);
  EXPECT_EQ(c.moe.shared_dff, 4);
  const moe::RouterConfig& r = c.moe.router;
  EXPECT_FALSE(r.softmax_scores);  // sigmoid
  EXPECT_TRUE(r.renormalize);
  EXPECT_FLOAT_EQ(r.routed_scaling, 2.5f);
  EXPECT_EQ(r.n_group, 2);
  EXPECT_EQ(r.topk_group, 1);
  EXPECT_EQ(r.group_score_top, 2);  // groups ranked by their two best (llama.cpp's rule too)
  EXPECT_TRUE(c.moe.use_expert_bias);
  EXPECT_EQ(c.layers[1].names.mla_embed_q, "model.layers.1.self_attn.embed_q");
  EXPECT_EQ(c.rope.kind, RopeKind::kYarn);
  EXPECT_EQ(c.rope.mscale_all_dim, 0.8);
  // Kimi-K2's shape: one group (no group keys), no RoPE scaling; plain RoPE then.
  TinyModel kimi = tiny_ds3();
  for (const char* key : {"expert_group_count", "expert_group_used_count", "rope.scaling.type",
                          "rope.scaling.factor", "rope.scaling.original_context_length",
                          "rope.scaling.yarn_log_multiplier"})
    kimi.keys.erase(std::string("deepseek2.") + key);
  EXPECT_EQ(open_error(kimi, "kimi"), "");
  const ModelConfig k = load_gguf_model_config(kimi.write("kimi_cfg"));
  EXPECT_EQ(k.moe.router.n_group, 1);
  EXPECT_NE(k.rope.kind, RopeKind::kYarn);
  // The older layout: one attn_kv_b, bound as deepseek_v2's is (embed_q's name cleared).
  TinyModel old = tiny_ds3();
  old.keys.erase("deepseek2.attention.key_length_mla");
  old.keys.erase("deepseek2.attention.value_length_mla");
  old.u32("deepseek2.attention.key_length", 4);
  old.u32("deepseek2.attention.value_length", 2);
  for (const std::string b : {"blk.0.", "blk.1."}) {
    old.tensors.erase(b + "attn_k_b.weight");
    old.tensors.erase(b + "attn_v_b.weight");
    old.tensors[b + "attn_kv_b.weight"] = {4, 8};
  }
  EXPECT_EQ(open_error(old, "ds3_legacy"), "");
  EXPECT_TRUE(load_gguf_model_config(old.write("ds3_legacy_cfg")).layers[1].names.mla_embed_q
                  .empty());
}

TEST(GgufDeepseek2, SigmoidGatedRefusedNamingTheKeyOrTensor) {
  const std::string a = "deepseek2.";
  expect_refused(tiny_ds3, "ds3_bad_", {
      {[&](TinyModel& m) { m.tensors.erase("blk.1.exp_probs_b.bias"); },
       {"missing tensor 'blk.1.exp_probs_b.bias'"}},
      {[&](TinyModel& m) { m.tensors["blk.1.exp_probs_b.bias"] = {2}; },
       {"blk.1.exp_probs_b.bias", "expected [4]"}},
      {[&](TinyModel& m) { m.u32(a + "expert_used_count", 1); },
       {a + "expert_weights_norm", "expert_used_count 1"}},
      {[&](TinyModel& m) { m.u32(a + "expert_group_count", 3); },
       {a + "expert_group_count", "must divide"}},
      {[&](TinyModel& m) { m.u32(a + "expert_group_used_count", 3); },
       {a + "expert_group_used_count", "[1, 2]"}},
      {[&](TinyModel& m) { m.f32(a + "expert_weights_scale", -2.f); },
       {a + "expert_weights_scale"}},
      {[&](TinyModel& m) { m.keys.erase(a + "rope.scaling.yarn_log_multiplier"); },
       {a + "rope.scaling.yarn_log_multiplier", "missing"}},
      {[&](TinyModel& m) { m.tensors.erase("output.weight"); },
       {"output.weight", "deepseek_v3 family has an untied lm_head"}},
  });
}

TEST(GgufGptOss, TinyFileLoadsAsTheGptOssFamily) {
  const TinyModel m = tiny_oss();
  EXPECT_EQ(open_error(m, "oss"), "");
  const ModelConfig c = load_gguf_model_config(m.write("oss_cfg"));
  EXPECT_EQ(c.family, "gpt_oss");
  EXPECT_TRUE(c.attention_sinks);
  EXPECT_EQ(c.layers[0].sliding_window, 4);  // llama.cpp's default pattern: even layers slide
  EXPECT_EQ(c.layers[1].sliding_window, 0);
  EXPECT_EQ(c.moe.activation, ExpertActivation::kSwiGLUOai);
  EXPECT_EQ(c.rope.kind, RopeKind::kYarn);
  EXPECT_EQ(c.rope.factor, 32.0);
  EXPECT_EQ(c.rope.mscale, 1.0);
  EXPECT_EQ(c.rope.mscale_all_dim, 0.0);
  TinyModel all = tiny_oss();
  all.u32("gpt-oss.attention.sliding_window_pattern", 0);  // 0: every layer slides
  EXPECT_EQ(load_gguf_model_config(all.write("oss_all_cfg")).layers[1].sliding_window, 4);
}

TEST(GgufGptOss, RefusedNamingTheKeyOrTensor) {
  const std::string a = "gpt-oss.";
  expect_refused(tiny_oss, "oss_bad_", {
      {[&](TinyModel& m) { m.keys.erase(a + "attention.sliding_window"); },
       {a + "attention.sliding_window", "missing"}},
      {[&](TinyModel& m) { m.u32(a + "attention.sliding_window_pattern", 5); },
       {a + "attention.sliding_window_pattern", "[0, 2]"}},
      {[&](TinyModel& m) { m.f32(a + "rope.freq_base_swa", 10000.f); },
       {a + "rope.freq_base_swa"}},
      {[&](TinyModel& m) { m.f32(a + "rope.scaling.yarn_log_multiplier", 0.1f); },
       {a + "rope.scaling.yarn_log_multiplier"}},
      {[&](TinyModel& m) { m.str(a + "rope.scaling.type", "longrope"); },
       {a + "rope.scaling.type"}},
      {[&](TinyModel& m) { m.f32(a + "rope.scaling.yarn_attn_factor", 2.f); },
       {a + "rope.scaling.yarn_attn_factor"}},
      {[&](TinyModel& m) { m.keys.erase(a + "expert_feed_forward_length"); },
       {a + "expert_feed_forward_length", "missing"}},
      {[&](TinyModel& m) { m.tensors.erase("blk.0.attn_sinks.weight"); },
       {"missing tensor 'blk.0.attn_sinks.weight'"}},
      {[&](TinyModel& m) { m.tensors["blk.1.attn_sinks.weight"] = {3}; },
       {"blk.1.attn_sinks.weight", "expected [2]"}},
      {[&](TinyModel& m) { m.tensors.erase("blk.1.ffn_up_exps.bias"); },
       {"missing tensor 'blk.1.ffn_up_exps.bias'"}},
      {[&](TinyModel& m) { m.tensors.erase("output.weight"); }, {"output.weight", "untied"}},
  });
}

}  // namespace
}  // namespace moex::model
