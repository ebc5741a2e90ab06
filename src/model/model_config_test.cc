// Config parsing: real Hugging Face configs of each family, every preset round-trips through
// its family, and bad input (wrong types, missing fields, unknown model_type) names the file
// and field.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>

#include <gtest/gtest.h>

#include "model/family_registry.h"
#include "model/model_test_util.h"

namespace moex::model {
namespace {

using nlohmann::json;
using testing::expect_error;

json qwen3_30b_config() {
  return json::parse(R"({
    "architectures": ["Qwen3MoeForCausalLM"], "attention_bias": false, "bos_token_id": 151643,
    "decoder_sparse_step": 1, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
    "hidden_size": 2048, "intermediate_size": 6144, "max_position_embeddings": 40960,
    "mlp_only_layers": [], "model_type": "qwen3_moe", "moe_intermediate_size": 768,
    "norm_topk_prob": true, "num_attention_heads": 32, "num_experts": 128,
    "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4,
    "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000.0,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 151936})");
}

TEST(ModelConfig, Qwen3MoeRealConfig) {
  const ModelConfig c = parse_model_config(qwen3_30b_config(), "q/config.json");
  EXPECT_EQ(c.family, "qwen3_moe");
  EXPECT_EQ(c.hidden, 2048);
  EXPECT_EQ(c.num_layers, 48);
  EXPECT_EQ(c.num_moe_layers(), 48);
  EXPECT_EQ(c.heads, 32);
  EXPECT_EQ(c.kv_heads, 4);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.q_dim(), 4096);
  EXPECT_EQ(c.qk_norm, QkNormKind::kPerHead);
  EXPECT_EQ(c.moe.num_experts, 128);
  EXPECT_EQ(c.moe.top_k, 8);
  EXPECT_EQ(c.moe.expert_dff, 768);
  EXPECT_EQ(c.moe.router.rule, moe::RoutingRule::kSoftmaxTopK);
  EXPECT_TRUE(c.moe.router.renormalize);
  EXPECT_EQ(c.moe.router.ties, moe::TopKTies::kHigherIndexWins);
  EXPECT_DOUBLE_EQ(c.rope.theta, 1e6);
  EXPECT_DOUBLE_EQ(c.norm_eps, 1e-6);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{151645});
  EXPECT_EQ(c.lm_head_name, "lm_head");
  EXPECT_EQ(c.layers[7].names.experts_gate, "model.layers.7.mlp.switch_mlp.gate_proj");
  EXPECT_EQ(c.layers[7].names.router, "model.layers.7.mlp.gate");
  EXPECT_EQ(c.layers[7].names.hf_expert_down, "model.layers.7.mlp.experts.{e}.down_proj");
  EXPECT_EQ(c.layers[7].names.q_norm, "model.layers.7.self_attn.q_norm");
}

TEST(ModelConfig, Qwen3MoeSparseStepAndMlpOnlyLayers) {
  json j = qwen3_30b_config();
  j["num_hidden_layers"] = 6;
  j["decoder_sparse_step"] = 2;
  j["mlp_only_layers"] = {3};
  j["norm_topk_prob"] = false;
  const ModelConfig c = parse_model_config(j, "config.json");
  // MoE where (i+1) % 2 == 0 and i not in mlp_only_layers: layers 1 and 5.
  std::vector<FfnKind> kinds;
  for (const LayerPlan& l : c.layers) kinds.push_back(l.ffn);
  EXPECT_EQ(kinds, (std::vector<FfnKind>{FfnKind::kDense, FfnKind::kMoe, FfnKind::kDense,
                                         FfnKind::kDense, FfnKind::kDense, FfnKind::kMoe}));
  EXPECT_EQ(c.layers[0].ffn_dff, 6144);
  EXPECT_EQ(c.layers[0].names.dense_down, "model.layers.0.mlp.down_proj");
  EXPECT_EQ(c.moe.router.rule, moe::RoutingRule::kSoftmaxTopK);
  EXPECT_FALSE(c.moe.router.renormalize);
}

TEST(ModelConfig, MixtralRealConfig) {
  const ModelConfig c = parse_model_config(json::parse(R"({
    "architectures": ["MixtralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
    "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 32768,
    "model_type": "mixtral", "num_attention_heads": 32, "num_experts_per_tok": 2,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8,
    "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "sliding_window": null,
    "tie_word_embeddings": false, "vocab_size": 32000})"), "m/config.json");
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.moe.router.rule, moe::RoutingRule::kTopKSoftmax);
  EXPECT_EQ(c.moe.router.ties, moe::TopKTies::kLowerIndexWins);
  EXPECT_EQ(c.moe.expert_dff, 14336);
  EXPECT_EQ(c.layers[0].names.experts_up, "model.layers.0.block_sparse_moe.switch_mlp.up_proj");
  EXPECT_EQ(c.layers[0].names.hf_expert_gate, "model.layers.0.block_sparse_moe.experts.{e}.w1");
  EXPECT_EQ(c.layers[0].names.hf_expert_up, "model.layers.0.block_sparse_moe.experts.{e}.w3");
  EXPECT_EQ(c.layers[0].names.hf_expert_down, "model.layers.0.block_sparse_moe.experts.{e}.w2");
  EXPECT_EQ(c.qk_norm, QkNormKind::kNone);
}

TEST(ModelConfig, OlmoeRealConfig) {
  const ModelConfig c = parse_model_config(json::parse(R"({
    "architectures": ["OlmoeForCausalLM"], "attention_bias": false, "bos_token_id": null,
    "clip_qkv": null, "eos_token_id": 50279, "hidden_size": 2048, "intermediate_size": 1024,
    "max_position_embeddings": 4096, "model_type": "olmoe", "norm_topk_prob": false,
    "num_attention_heads": 16, "num_experts": 64, "num_experts_per_tok": 8,
    "num_hidden_layers": 16, "num_key_value_heads": 16, "rms_norm_eps": 1e-05,
    "rope_scaling": null, "rope_theta": 10000.0, "tie_word_embeddings": false,
    "vocab_size": 50304})"), "o/config.json");
  EXPECT_EQ(c.qk_norm, QkNormKind::kFullWidth);
  EXPECT_EQ(c.moe.router.rule, moe::RoutingRule::kSoftmaxTopK);
  EXPECT_FALSE(c.moe.router.renormalize);
  EXPECT_EQ(c.moe.router.ties, moe::TopKTies::kLowerIndexWins);
  EXPECT_EQ(c.bos_token_id, -1);
  EXPECT_FALSE(c.tie_word_embeddings);
}

TEST(ModelConfig, PhimoeLongRopeAndLayerNorm) {
  const ModelPreset* p = find_preset("phi-3.5-moe");
  ASSERT_NE(p, nullptr);
  json j = preset_config_json(*p);
  const ModelConfig c = parse_model_config(j, "phi/config.json");
  EXPECT_EQ(c.norm, NormKind::kLayerNorm);
  EXPECT_TRUE(c.q_bias && c.k_bias && c.v_bias && c.o_bias && c.lm_head_bias);
  EXPECT_EQ(c.rope.kind, RopeKind::kLongRope);
  EXPECT_EQ(c.rope.long_factor.size(), 64u);
  EXPECT_EQ(c.rope.original_max_position, 4096);
  EXPECT_DOUBLE_EQ(c.rope.input_scale, 1.243163121016122);  // long_mscale, as mlx-lm uses it
  EXPECT_EQ(c.moe.router.rule, moe::RoutingRule::kSparseMixer);
  // A factor list of the wrong length names the field.
  j["rope_scaling"]["long_factor"] = json::array({1.0, 2.0});
  expect_error([&] { parse_model_config(j, "phi/config.json"); },
               {"phi/config.json", "long_factor", "64"});
}

TEST(ModelConfig, Llama4TextConfigLayerPlan) {
  const ModelConfig c = parse_model_config(preset_config_json(*find_preset("llama-4-scout")), "l4");
  EXPECT_EQ(c.model_type, "llama4");
  EXPECT_EQ(c.num_layers, 48);
  EXPECT_EQ(c.rope.kind, RopeKind::kLlama3);
  EXPECT_TRUE(c.rope.traditional);
  EXPECT_EQ(c.moe.router.rule, moe::RoutingRule::kSigmoidTop1ScalesInput);
  EXPECT_EQ(c.moe.shared_dff, 8192);
  for (int64_t i = 0; i < 8; ++i) {
    const bool nope = (i + 1) % 4 == 0;
    EXPECT_EQ(c.layers[size_t(i)].use_rope, !nope) << i;
    EXPECT_EQ(c.layers[size_t(i)].chunked_attention, !nope) << i;
    EXPECT_EQ(c.layers[size_t(i)].attn_temperature, nope) << i;
    EXPECT_EQ(c.layers[size_t(i)].qk_norm, !nope) << i;
  }
  EXPECT_EQ(c.layers[0].names.experts_down, "language_model.model.layers.0.feed_forward.experts.down_proj");
  EXPECT_EQ(c.layers[0].names.shared_up, "language_model.model.layers.0.feed_forward.shared_expert.up_proj");
  EXPECT_EQ(c.lm_head_name, "language_model.lm_head");
}

TEST(ModelConfig, Lfm2HybridLayerPlan) {
  const ModelConfig c = parse_model_config(preset_config_json(*find_preset("lfm2-8b-a1b")), "lfm2");
  int attn = 0, dense = 0;
  for (const LayerPlan& l : c.layers) {
    attn += l.mixer == MixerKind::kAttention;
    dense += l.ffn == FfnKind::kDense;
  }
  EXPECT_EQ(attn, 6);
  EXPECT_EQ(dense, 2);
  EXPECT_EQ(c.layers[2].mixer, MixerKind::kAttention);
  EXPECT_EQ(c.layers[2].names.o, "model.layers.2.self_attn.out_proj");
  EXPECT_EQ(c.layers[3].names.conv, "model.layers.3.conv.conv");
  EXPECT_EQ(c.layers[3].names.expert_bias, "model.layers.3.feed_forward.expert_bias");
  EXPECT_EQ(c.moe.router.rule, moe::RoutingRule::kSigmoidBiasTopK);
  EXPECT_EQ(c.moe.router.ties, moe::TopKTies::kHigherIndexWins);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.final_norm_name, "model.embedding_norm");
}

// DeepSeek-V3: every layer multi-head latent attention, the first 3 FFNs dense; YaRN on the
// 64 RoPE dims with the softmax scale 192^-0.5 * (0.1 ln 40 + 1)^2; the cache holds 512 + 64
// floats per token per layer where full K/V would hold 128 x (192 + 128).
TEST(ModelConfig, DeepseekV3LatentAttentionPlan) {
  const ModelConfig c = parse_model_config(preset_config_json(*find_preset("deepseek-v3")), "d");
  EXPECT_EQ(c.family, "deepseek_v3");
  EXPECT_EQ(c.num_moe_layers(), 58);
  EXPECT_EQ(c.layers[2].ffn, FfnKind::kDense);
  EXPECT_EQ(c.layers[3].ffn, FfnKind::kMoe);
  for (const LayerPlan& l : c.layers) EXPECT_EQ(l.mixer, MixerKind::kMla);
  EXPECT_EQ(c.layers[3].names.mla_q_a, "model.layers.3.self_attn.q_a_proj");
  EXPECT_EQ(c.layers[3].names.mla_embed_q, "model.layers.3.self_attn.embed_q");
  EXPECT_EQ(c.layers[3].names.expert_bias, "model.layers.3.mlp.gate.e_score_correction_bias");
  EXPECT_EQ(c.layers[3].names.shared_gate, "model.layers.3.mlp.shared_experts.gate_proj");
  EXPECT_TRUE(c.layers[3].names.q.empty());
  EXPECT_EQ(c.moe.router.rule, moe::RoutingRule::kSigmoidBiasTopK);
  EXPECT_EQ(c.moe.router.n_group, 8);
  EXPECT_EQ(c.moe.router.topk_group, 4);
  EXPECT_EQ(c.moe.shared_dff, 2048);
  EXPECT_EQ(c.rope.kind, RopeKind::kYarn);
  EXPECT_TRUE(c.rope.traditional);
  EXPECT_EQ(c.rope.dims, 64);
  const double s = 0.1 * std::log(40.0) + 1.0;
  EXPECT_NEAR(c.attn_scale, s * s / std::sqrt(192.0), 1e-12);
  EXPECT_EQ(kv_cache_bytes_per_token(c), int64_t{61} * (512 + 64) * 4);
  EXPECT_EQ(kv_cache_bytes_per_token(c, DType::F16), int64_t{61} * (512 + 64) * 4);  // MLA: f32
  EXPECT_EQ(mla_full_kv_bytes_per_token(c), int64_t{61} * 128 * (192 + 128) * 4);
  EXPECT_NE(describe_layer(c, 0).find("mla(yarn, q_lora 1536, kv_lora 512"), std::string::npos)
      << describe_layer(c, 0);
  // Kimi-K2 reads as the same family; without q LoRA the layer has a q_proj.
  const ModelConfig k = parse_model_config(preset_config_json(*find_preset("kimi-k2")), "k");
  EXPECT_EQ(k.family, "deepseek_v3");
  EXPECT_EQ(k.moe.num_experts, 384);
  EXPECT_EQ(k.num_moe_layers(), 60);
  json j = preset_config_json(*find_preset("tiny-deepseek-v3"));
  j["q_lora_rank"] = nullptr;
  const ModelConfig q = parse_model_config(j, "q");
  EXPECT_EQ(q.mla.q_lora_rank, 0);
  EXPECT_EQ(q.layers[0].names.q, "model.layers.0.self_attn.q_proj");
  EXPECT_TRUE(q.layers[0].names.mla_q_a.empty());
  // Bad values name their field.
  j = preset_config_json(*find_preset("tiny-deepseek-v3"));
  j["qk_rope_head_dim"] = 31;
  expect_error([&] { parse_model_config(j, "d.json"); }, {"d.json", "qk_rope_head_dim"});
  j = preset_config_json(*find_preset("tiny-deepseek-v3"));
  j["topk_method"] = "greedy";
  expect_error([&] { parse_model_config(j, "d.json"); }, {"d.json", "topk_method"});
  j = preset_config_json(*find_preset("tiny-deepseek-v3"));
  j["n_group"] = 3;
  expect_error([&] { parse_model_config(j, "d.json"); }, {"d.json", "n_group"});
  j = preset_config_json(*find_preset("tiny-deepseek-v3"));
  j["rope_scaling"]["mscale_all_dim"] = -100.0;
  expect_error([&] { parse_model_config(j, "d.json"); }, {"d.json", "mscale_all_dim"});
}

// Qwen3-Next: every 4th layer gated attention (partial RoPE), the others Gated DeltaNet; the
// shared expert is gated; bad linear-attention geometry names its field.
TEST(ModelConfig, Qwen3NextHybridLayerPlan) {
  const json j = preset_config_json(*find_preset("qwen3-next-80b-a3b"));
  const ModelConfig c = parse_model_config(j, "qn");
  int attn = 0;
  for (const LayerPlan& l : c.layers) attn += l.mixer == MixerKind::kAttention;
  EXPECT_EQ(attn, 12);
  EXPECT_EQ(c.layers[3].mixer, MixerKind::kAttention);
  EXPECT_TRUE(c.layers[3].attn_output_gate);
  EXPECT_EQ(c.layers[0].mixer, MixerKind::kGatedDeltaNet);
  EXPECT_EQ(c.layers[0].names.gdn_qkvz, "model.layers.0.linear_attn.in_proj_qkvz");
  EXPECT_EQ(c.layers[0].names.gdn_a_log, "model.layers.0.linear_attn.A_log");
  EXPECT_EQ(c.gdn.conv_dim(), 2 * 16 * 128 + 32 * 128);
  EXPECT_EQ(c.rope.dims, 64);  // 256 * 0.25
  EXPECT_EQ(c.moe.router.rule, moe::RoutingRule::kSoftmaxTopK);
  EXPECT_TRUE(c.moe.router.renormalize);
  EXPECT_TRUE(c.moe.shared_expert_gated);
  EXPECT_EQ(c.layers[0].names.shared_expert_gate, "model.layers.0.mlp.shared_expert_gate");
  EXPECT_NE(describe_layer(c, 0).find("gated_deltanet(16x128 k, 32x128 v, conv L=4)"),
            std::string::npos)
      << describe_layer(c, 0);
  EXPECT_NE(describe_layer(c, 3).find("output gate"), std::string::npos) << describe_layer(c, 3);
  // 36 linear layers of 3 x 8192 conv + 32 x 128 x 128 state floats; 12 attention layers of
  // 2 kv heads x 256 for K and V.
  EXPECT_EQ(recurrent_state_bytes(c), int64_t{36} * (3 * 8192 + 32 * 128 * 128) * 4);
  EXPECT_EQ(kv_cache_bytes_per_token(c), int64_t{12} * 2 * 2 * 256 * 4);
  EXPECT_EQ(kv_cache_bytes_per_token(c, DType::F16), int64_t{12} * 2 * 2 * 256 * 2);
  json bad = j;
  bad["linear_num_value_heads"] = 24;
  expect_error([&] { parse_model_config(bad, "qn/config.json"); },
               {"qn/config.json", "linear_num_value_heads", "linear_num_key_heads"});
  bad = j;
  bad["partial_rotary_factor"] = 0.001;
  expect_error([&] { parse_model_config(bad, "qn/config.json"); }, {"partial_rotary_factor"});
  bad = j;
  bad.erase("linear_key_head_dim");
  expect_error([&] { parse_model_config(bad, "qn/config.json"); }, {"linear_key_head_dim"});
  bad = j;
  bad.erase("mlp_only_layers");
  expect_error([&] { parse_model_config(bad, "qn/config.json"); }, {"mlp_only_layers"});
}

TEST(ModelConfig, EveryPresetRoundTripsThroughItsFamily) {
  for (const ModelPreset& p : all_presets()) {
    SCOPED_TRACE(p.name);
    const ModelConfig c = parse_model_config(preset_config_json(p), p.name);
    EXPECT_EQ(c.hidden, p.hidden);
    EXPECT_EQ(c.num_layers, p.layers);
    EXPECT_EQ(c.vocab, p.vocab);
    EXPECT_EQ(c.heads, p.heads);
    EXPECT_EQ(c.kv_heads, p.kv_heads);
    EXPECT_EQ(c.head_dim, p.head_dim);
    EXPECT_EQ(c.moe.num_experts, p.experts);
    EXPECT_EQ(c.moe.top_k, p.top_k);
    EXPECT_EQ(c.moe.expert_dff, p.moe_dff);
    EXPECT_EQ(c.moe.shared_dff, p.shared_dff);
    EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{synthetic_eos_id(p.vocab)});
    // Nemotron-H: the pattern's 'E' blocks; the others: all but the leading dense layers.
    const int64_t moe_blocks = std::count(p.hybrid_pattern.begin(), p.hybrid_pattern.end(), 'E');
    EXPECT_EQ(c.num_moe_layers(),
              p.hybrid_pattern.empty() ? p.layers - p.dense_layers : moe_blocks);
    // --layers truncation keeps a valid model.
    EXPECT_EQ(parse_model_config(preset_config_json(p, 2), p.name).num_layers, 2);
  }
}

TEST(ModelConfig, WrongTypeNamesFileAndField) {
  json j = qwen3_30b_config();
  j["hidden_size"] = "2048";
  expect_error([&] { parse_model_config(j, "x/config.json"); }, {"x/config.json", "hidden_size"});
  j = qwen3_30b_config();
  j["norm_topk_prob"] = 1;
  expect_error([&] { parse_model_config(j, "x/config.json"); }, {"norm_topk_prob"});
  j = qwen3_30b_config();
  j["num_experts"] = 4.5;
  expect_error([&] { parse_model_config(j, "x/config.json"); }, {"num_experts"});
}

TEST(ModelConfig, MissingFieldNamesIt) {
  json j = qwen3_30b_config();
  j.erase("moe_intermediate_size");
  expect_error([&] { parse_model_config(j, "x/config.json"); }, {"x/config.json", "moe_intermediate_size"});
  json l4 = preset_config_json(*find_preset("tiny-llama4"));
  l4["text_config"].erase("num_local_experts");
  expect_error([&] { parse_model_config(l4, "l4/config.json"); }, {"text_config", "num_local_experts"});
}

TEST(ModelConfig, InconsistentValuesAreRejected) {
  json j = qwen3_30b_config();
  j["num_experts_per_tok"] = 129;
  expect_error([&] { parse_model_config(j, "c.json"); }, {"num_experts_per_tok", "129"});
  j = qwen3_30b_config();
  j["num_key_value_heads"] = 5;
  expect_error([&] { parse_model_config(j, "c.json"); }, {"num_key_value_heads"});
  j = qwen3_30b_config();
  j["rope_scaling"] = {{"rope_type", "wobbly"}, {"factor", 2.0}};
  expect_error([&] { parse_model_config(j, "c.json"); }, {"rope_scaling", "wobbly"});
}

// gpt_oss and glm4_moe fields that are not sizes: each bad value names its field.
TEST(ModelConfig, GptOssAndGlm4FieldsAreChecked) {
  const json oss = preset_config_json(*find_preset("tiny-gpt-oss"));
  json j = oss;
  j["layer_types"] = json::array({"sliding_attention", "full_attention"});  // 2 for 4 layers
  expect_error([&] { parse_model_config(j, "o.json"); }, {"o.json", "layer_types", "4"});
  j = oss;
  j["layer_types"][1] = "chunked_attention";
  expect_error([&] { parse_model_config(j, "o.json"); }, {"layer_types", "[1]"});
  j = oss;
  j.erase("layer_types");
  j["num_hidden_layers"] = 3;  // mlx-lm's default alternation would drop the last layer
  expect_error([&] { parse_model_config(j, "o.json"); }, {"layer_types", "odd"});
  j = oss;
  j.erase("head_dim");
  expect_error([&] { parse_model_config(j, "o.json"); }, {"head_dim"});

  const json glm = preset_config_json(*find_preset("tiny-glm4-moe"));
  for (double bad : {0.0, -0.5, 1.5, 1e300, 0.01, std::nan("")}) {
    j = glm;
    j["partial_rotary_factor"] = bad;
    SCOPED_TRACE(bad);
    expect_error([&] { parse_model_config(j, "g.json"); }, {"g.json", "partial_rotary_factor"});
  }
  j = glm;
  j["n_group"] = 3;  // 8 experts do not split into 3 groups
  expect_error([&] { parse_model_config(j, "g.json"); }, {"n_group"});
  j = glm;
  j["topk_group"] = 3;  // more groups kept than exist
  expect_error([&] { parse_model_config(j, "g.json"); }, {"topk_group"});
  j = glm;
  j["num_experts_per_tok"] = 5;  // more than the 4 experts of the one group kept
  expect_error([&] { parse_model_config(j, "g.json"); }, {"num_experts_per_tok"});
  j = glm;
  j["topk_method"] = "greedy";
  expect_error([&] { parse_model_config(j, "g.json"); }, {"topk_method"});
  j = glm;
  j["routed_scaling_factor"] = std::nan("");
  expect_error([&] { parse_model_config(j, "g.json"); }, {"routed_scaling_factor"});
}

// heads x head_dim used to wrap to the real q width (4 + 2^58 heads x 128 = 512 mod 2^64), so
// every shape check passed and the engine overran a heap buffer.
TEST(ModelConfig, HeadCountThatWrapsTheQWidthIsRejected) {
  json j = qwen3_30b_config();
  j["num_attention_heads"] = (int64_t{1} << 58) + 4;
  j["num_key_value_heads"] = 4;
  expect_error([&] { parse_model_config(j, "c.json"); }, {"c.json", "num_attention_heads", "out of range"});
  j = qwen3_30b_config();
  j["num_hidden_layers"] = 1000000000;  // used to build a billion-entry layer plan first
  expect_error([&] { parse_model_config(j, "c.json"); }, {"num_hidden_layers", "[1, 1024]"});
}
// Fields whose absence is an error, and zeros that mlx-lm reads as "derive it": a Hunyuan
// config without moe_topk or num_shared_expert is refused naming the field (it used to read a
// missing key of a const object), and ERNIE's head_dim 0 means hidden_size / heads.
TEST(ModelConfig, MissingListFieldsAndZeroHeadDim) {
  const json hy = preset_config_json(*find_preset("tiny-hunyuan"));
  for (const char* field : {"moe_topk", "num_shared_expert"}) {
    json j = hy;
    j.erase(field);
    expect_error([&] { parse_model_config(j, "h.json"); }, {"h.json", field});
  }
  json er = preset_config_json(*find_preset("tiny-ernie4-5-moe"));
  er["head_dim"] = 0;
  const ModelConfig c = parse_model_config(er, "e.json");
  EXPECT_EQ(c.head_dim, c.hidden / c.heads);
}

// Hunyuan's top-k is used as it is (mlx-lm, which ignores the config's norm_topk_prob, true in
// Hunyuan-A13B's config) unless the config sets moex's own moex_renormalize_topk, as the GGUF
// mapping does (llama.cpp renormalizes).
TEST(ModelConfig, HunyuanRenormalizesOnlyWhenAsked) {
  json j = preset_config_json(*find_preset("tiny-hunyuan"));
  EXPECT_FALSE(parse_model_config(j, "h.json").moe.router.renormalize);
  j["norm_topk_prob"] = true;  // the real config's field: mlx-lm does not read it
  EXPECT_FALSE(parse_model_config(j, "h.json").moe.router.renormalize);
  j["moex_renormalize_topk"] = true;
  EXPECT_TRUE(parse_model_config(j, "h.json").moe.router.renormalize);
  j["moex_renormalize_topk"] = "yes";
  expect_error([&] { parse_model_config(j, "h.json"); }, {"h.json", "moex_renormalize_topk"});
}

// ERNIE-4.5 routes as mlx-lm (without the correction bias) unless the config sets moex's
// route_with_correction_bias, as the GGUF mapping of a file with exp_probs_b does.
TEST(ModelConfig, ErnieRoutesWithTheCorrectionBiasOnlyWhenAsked) {
  json j = preset_config_json(*find_preset("tiny-ernie4-5-moe"));
  const ModelConfig plain = parse_model_config(j, "e.json");
  EXPECT_FALSE(plain.moe.use_expert_bias);
  EXPECT_EQ(plain.moe.router.rule, moe::RoutingRule::kSoftmaxTopK);
  j["route_with_correction_bias"] = true;
  const ModelConfig biased = parse_model_config(j, "e.json");
  EXPECT_TRUE(biased.moe.use_expert_bias);
  EXPECT_TRUE(biased.moe.router.softmax_scores);
  for (const LayerPlan& l : biased.layers)
    EXPECT_EQ(l.names.expert_bias.empty(), l.ffn != FfnKind::kMoe);
  j["route_with_correction_bias"] = 1;
  expect_error([&] { parse_model_config(j, "e.json"); }, {"e.json", "route_with_correction_bias"});
}

// Every integer field a family reads is range checked: absurd values (negative, past int32,
// values whose products wrap int64) are refused naming the field, for one preset per family.
TEST(ModelConfig, EveryIntegerFieldIsRangeChecked) {
  // Fields where 0 is meaningful: eos id 0, no leading dense layers, Qwen3 with no experts;
  // ERNIE's expert size 0 (= intermediate_size), no shared experts, MoE from/until layer 0;
  // Ling without shared experts.
  const std::set<std::string> zero_ok = {
      "eos_token_id", "num_dense_layers", "num_experts", "first_k_dense_replace",
      "ernie4_5_moe:moe_intermediate_size", "ernie4_5_moe:moe_num_shared_experts",
      "ernie4_5_moe:moe_layer_start_index", "ernie4_5_moe:moe_layer_end_index",
      "bailing_moe:num_shared_experts", "ernie4_5_moe:head_dim", "gemma4_text:hidden_size_per_layer_input",
      "gemma4_text:num_kv_shared_layers", "gemma4_text:global_head_dim"};
  // Written by the presets but read by none of mlx-lm's model files for that family.
  const std::set<std::string> unread = {"qwen2_moe:decoder_sparse_step",
                                        "minimax:shared_intermediate_size",
                                        "hunyuan:cla_share_factor"};
  const int64_t absurd[] = {-1, (int64_t{1} << 31) + 3, (int64_t{1} << 58) + 4, int64_t{1} << 62};
  std::set<std::string> model_types, families;
  for (const ModelPreset& p : all_presets()) {
    if (!model_types.insert(p.model_type).second) continue;
    const json base = preset_config_json(p);
    families.insert(parse_model_config(base, "c.json").family);
    const bool nested = base.contains("text_config");
    const json& fields = nested ? base["text_config"] : base;
    for (const auto& [field, value] : fields.items()) {
      if (!value.is_number_integer() || field == "floor_scale") continue;  // floor_scale: a float
      const ModelConfig ref = parse_model_config(base, "c.json");
      if (unread.count(ref.family + ":" + field)) continue;
      std::vector<int64_t> values(std::begin(absurd), std::end(absurd));
      if (!zero_ok.count(field) && !zero_ok.count(ref.family + ":" + field)) values.push_back(0);
      for (int64_t v : values) {
        SCOPED_TRACE(p.name + ": " + field + " = " + std::to_string(v));
        json j = base;
        (nested ? j["text_config"] : j)[field] = v;
        expect_error([&] { parse_model_config(j, "c.json"); }, {"c.json", field});
      }
    }
  }
  // Some preset of every registered family was checked.
  for (const Family* f : all_families()) EXPECT_EQ(families.count(f->name()), 1u) << f->name();
}

// arch/families.def names one tiny preset per family, which the tests run over every family
// (tiny_families(), the reference tests' lists in CMake): it exists, is tiny, is read by that
// family, and no two families share one.
TEST(FamilyRegistry, EachFamilyNamesItsTinyPreset) {
  const auto& families = all_families();
  const auto& presets = tiny_family_presets();
  ASSERT_EQ(presets.size(), families.size());
  std::set<std::string> seen;
  for (size_t i = 0; i < families.size(); ++i) {
    SCOPED_TRACE(families[i]->name());
    const ModelPreset* p = find_preset(presets[i]);
    ASSERT_NE(p, nullptr) << presets[i];
    EXPECT_TRUE(p->tiny) << presets[i];
    EXPECT_EQ(find_family(p->model_type), families[i]) << presets[i];
    EXPECT_TRUE(seen.insert(presets[i]).second) << presets[i];
  }
}

TEST(ModelConfig, TokenIdsOutsideTheVocabularyAreRejected) {
  json j = qwen3_30b_config();
  j["eos_token_id"] = int64_t{4294967301};  // 2^32 + 5: must not become id 5
  expect_error([&] { parse_model_config(j, "c.json"); }, {"eos_token_id", "4294967301"});
  j["eos_token_id"] = json::array({151645, 151936});
  expect_error([&] { parse_model_config(j, "c.json"); }, {"eos_token_id", "151936"});
  j = qwen3_30b_config();
  j["bos_token_id"] = -2;
  expect_error([&] { parse_model_config(j, "c.json"); }, {"bos_token_id"});
  j["bos_token_id"] = nullptr;
  EXPECT_EQ(parse_model_config(j, "c.json").bos_token_id, -1);
}

TEST(ModelConfig, UnknownModelTypeListsSupported) {
  json j = qwen3_30b_config();
  j["model_type"] = "no_such_family";
  // The message names every model_type of every registered family.
  for (const Family* f : all_families())
    for (const std::string& type : f->model_types())
      expect_error([&] { parse_model_config(j, "g/config.json"); },
                   {"g/config.json", "'no_such_family' is not supported", type});
  j.erase("model_type");
  expect_error([&] { parse_model_config(j, "g/config.json"); }, {"model_type"});
}

// nemotron_h: the block pattern decides each layer's kind (a mixer alone or an FFN alone), its
// aliases read as mlx-lm reads them, the decode state of the real shape, and what is refused.
TEST(ModelConfig, NemotronHReadsItsPattern) {
  const json nano = preset_config_json(*find_preset("nemotron-3-nano-30b-a3b"));
  const ModelConfig c = parse_model_config(nano, "n/config.json");
  ASSERT_EQ(c.num_layers, 52);
  EXPECT_EQ(c.layers[0].mixer, MixerKind::kMamba2);
  EXPECT_EQ(c.layers[0].ffn, FfnKind::kNone);
  EXPECT_EQ(c.layers[1].mixer, MixerKind::kNone);
  EXPECT_EQ(c.layers[1].ffn, FfnKind::kMoe);
  EXPECT_EQ(c.layers[5].mixer, MixerKind::kAttention);
  EXPECT_FALSE(c.layers[5].use_rope);
  EXPECT_EQ(c.num_moe_layers(), 23);
  EXPECT_EQ(c.moe.activation, ExpertActivation::kReLU2);
  EXPECT_EQ(c.moe.shared_activation, ExpertActivation::kReLU2);
  EXPECT_EQ(c.mamba.conv_dim(), 4096 + 2 * 8 * 128);
  // 6 attention layers x 2 x 2 kv heads x 128 floats; 23 Mamba-2 layers x (3 x 6144 conv +
  // 64 x 64 x 128 SSM) floats.
  EXPECT_EQ(kv_cache_bytes_per_token(c), 6 * 2 * 2 * 128 * 4);
  EXPECT_EQ(recurrent_state_bytes(c), int64_t{23} * (3 * 6144 + 64 * 64 * 128) * 4);
  EXPECT_EQ(describe_layer(c, 1),
            "L1: moe 128x1856 top-6 sigmoid_bias_topk renorm scale 2.5 ties-low relu2 + shared "
            "3712 relu2");
  json j = nano;
  j.erase("hybrid_override_pattern");
  j["layers_block_type"] = json::array({"mamba", "moe", "attention", "mlp"});
  j["num_hidden_layers"] = 4;
  const ModelConfig a = parse_model_config(j, "n/config.json");
  EXPECT_EQ(a.layers[3].ffn, FfnKind::kDense);
  EXPECT_EQ(a.layers[3].mixer, MixerKind::kNone);
  j["layers_block_type"] = json::array({"mamba", "moe", "sliding"});
  expect_error([&] { parse_model_config(j, "n/config.json"); }, {"layers_block_type", "sliding"});
  j.erase("layers_block_type");
  expect_error([&] { parse_model_config(j, "n/config.json"); }, {"hybrid_override_pattern"});
  j = nano;
  j["hybrid_override_pattern"] = "MEMX";
  j["num_hidden_layers"] = 4;
  expect_error([&] { parse_model_config(j, "n/config.json"); }, {"hybrid_override_pattern", "X"});
  j = nano;
  j["num_hidden_layers"] = 51;
  expect_error([&] { parse_model_config(j, "n/config.json"); }, {"num_hidden_layers", "52"});
  j = nano;
  j["moe_latent_size"] = 1024;
  expect_error([&] { parse_model_config(j, "n/config.json"); }, {"moe_latent_size"});
  j = nano;
  j["mlp_bias"] = true;
  expect_error([&] { parse_model_config(j, "n/config.json"); }, {"mlp_bias"});
  j = nano;
  j["time_step_limit"] = json::array({1.0, 0.5});
  expect_error([&] { parse_model_config(j, "n/config.json"); }, {"time_step_limit"});
  j = nano;
  j["mamba_num_heads"] = 60;  // not a multiple of n_groups = 8
  expect_error([&] { parse_model_config(j, "n/config.json"); }, {"mamba_num_heads", "n_groups"});
  // A layer-reduced preset keeps the pattern's first blocks.
  const ModelConfig r = parse_model_config(
      preset_config_json(*find_preset("nemotron-3-nano-30b-a3b"), 8), "n/config.json");
  EXPECT_EQ(r.layers[5].mixer, MixerKind::kAttention);
  EXPECT_EQ(r.num_moe_layers(), 3);
}

TEST(ModelConfig, LoadFromDirectoryNamesMissingFile) {
  testing::TempDir tmp;
  expect_error([&] { load_model_config(tmp.path()); }, {tmp.path() + "/config.json"});
}

// gemma4_text runs the MoE variant only; mlx-lm's defaults for the per-layer-input and
// KV-sharing fields are the E2B model's, so a config that omits them is refused, not misread.
TEST(ModelConfig, Gemma4RefusesWhatItDoesNotRun) {
  const json base = preset_config_json(*find_preset("tiny-gemma4"));
  const ModelConfig c = parse_model_config(base, "g/config.json");
  EXPECT_EQ(c.layer_head_dim(0), 64);
  EXPECT_EQ(c.layer_head_dim(3), 128);
  EXPECT_EQ(c.layer_kv_heads(3), 1);
  EXPECT_TRUE(c.layers[3].values_from_keys);
  EXPECT_FALSE(c.layers[2].values_from_keys);
  EXPECT_EQ(c.layer_rope(3).kind, RopeKind::kProportional);
  EXPECT_EQ(c.layer_rope(3).rotated_dims, 32);
  EXPECT_EQ(c.layers[0].sliding_window, 8);
  for (const char* field : {"hidden_size_per_layer_input", "num_kv_shared_layers"}) {
    json j = base;
    j.erase(field);
    expect_error([&] { parse_model_config(j, "g/config.json"); }, {"g/config.json", std::string(field)});
    j[field] = 1;
    expect_error([&] { parse_model_config(j, "g/config.json"); }, {"g/config.json", std::string(field)});
  }
  json j = base;
  j["enable_moe_block"] = false;
  expect_error([&] { parse_model_config(j, "g/config.json"); }, {"enable_moe_block"});
  j = base;
  j["rope_parameters"]["full_attention"]["rope_type"] = "yarn";
  expect_error([&] { parse_model_config(j, "g/config.json"); }, {"full_attention", "yarn"});
}

// Qwen3.5-MoE's released text_config has no norm_topk_prob: mlx-lm's qwen3_5 TextModelArgs
// renormalizes the top-k then (default true), where its qwen3_next ModelArgs does not (false).
// Its Hub checkpoint is read under mlx-lm's sanitized names: model.language_model.* and
// lm_head.* renamed, fused outputs-first experts, zero-centred norms.
TEST(ModelConfig, Qwen35MoeAsMlxLmReadsTheReleasedConfig) {
  json j = preset_config_json(*find_preset("tiny-qwen3-5-moe"));
  ASSERT_TRUE(j["text_config"].contains("norm_topk_prob"));
  j["text_config"].erase("norm_topk_prob");
  const ModelConfig c = parse_model_config(j, "q/config.json");
  EXPECT_TRUE(c.moe.router.renormalize);
  EXPECT_TRUE(c.hf_layout_norms_plus_one);
  EXPECT_EQ(c.layers[1].names.hf_experts_gate_up,
            "language_model.model.layers.1.mlp.experts.gate_up_proj");
  EXPECT_EQ(c.layers[1].names.hf_experts_down, "language_model.model.layers.1.mlp.experts.down_proj");
  EXPECT_EQ(c.layers[1].names.hf_fused, HfFusedExperts::kOutputsFirst);
  EXPECT_EQ(c.layers[1].names.hf_expert_gate, "");  // no per-expert names (mlx-lm maps none)
  const Family& fam = family_for("qwen3_5_moe", "q/config.json");
  EXPECT_EQ(fam.reference_rename(c, "model.language_model.layers.0.linear_attn.conv1d.weight"),
            "language_model.model.layers.0.linear_attn.conv1d.weight");
  EXPECT_EQ(fam.reference_rename(c, "lm_head.weight"), "language_model.lm_head.weight");
  EXPECT_EQ(fam.reference_rename(c, "language_model.lm_head.weight"), "");
  EXPECT_EQ(fam.reference_rename(c, "mtp.fc.weight"), "");
  EXPECT_TRUE(fam.reference_drops(c, "mtp.fc.weight"));

  json n = preset_config_json(*find_preset("tiny-qwen3-next"));
  ASSERT_TRUE(n.contains("norm_topk_prob"));
  n.erase("norm_topk_prob");
  EXPECT_FALSE(parse_model_config(n, "n/config.json").moe.router.renormalize);
}

// The model_types mlx-lm's MODEL_REMAPPING sends to a module moex reads: MiniMax-M2's Hub
// config (minimax_m2), JoyAI (joyai_llm_flash, deepseek_v3), gemma4_unified (the gemma4
// wrapper). The config keeps its model_type; the family is the module's.
TEST(ModelConfig, ModelTypeAliasesOfMlxLm) {
  struct Case {
    const char* preset;
    const char* alias;
    const char* family;
    const char* embed;
  };
  for (const Case& k : {Case{"tiny-minimax", "minimax_m2", "minimax", "model.embed_tokens"},
                        Case{"tiny-deepseek-v3", "joyai_llm_flash", "deepseek_v3",
                             "model.embed_tokens"},
                        Case{"tiny-gemma4-wrapped", "gemma4_unified", "gemma4_text",
                             "language_model.model.embed_tokens"}}) {
    SCOPED_TRACE(k.alias);
    json j = preset_config_json(*find_preset(k.preset));
    j["model_type"] = k.alias;
    const ModelConfig c = parse_model_config(j, "a/config.json");
    EXPECT_EQ(c.family, k.family);
    EXPECT_EQ(c.model_type, k.alias);
    EXPECT_EQ(c.embed_name, k.embed);
  }
}

// Nemotron-H's time_step_limit as Python writes transformers' default (0.0, inf): a bare
// Infinity (the json module) or {"__float__": "Infinity"} (transformers 5, mlx-lm 0.32), also
// -Infinity for the minimum. NaN, and a non-finite value in any other field, are refused with
// the field named.
TEST(ModelConfig, NemotronHTimeStepLimitAsPythonWritesIt) {
  const std::string nano = preset_config_json(*find_preset("nemotron-3-nano-30b-a3b"), 4).dump();
  const auto with = [&](const std::string& field, const std::string& value) {
    const std::string key = "\"" + field + "\":";  // dump() writes no spaces
    std::string text = nano;
    const size_t at = text.find(key);
    if (at == std::string::npos) return text.insert(1, key + value + ", ");
    const size_t end = text.find_first_of(",}", at);  // a scalar field's value
    return text.replace(at, end - at, key + value);
  };
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    std::string limit;
    double lo, hi;
  };
  for (const Case& k : {Case{"[0.0, Infinity]", 0.0, inf},
                        Case{R"([0.0, {"__float__": "Infinity"}])", 0.0, inf},
                        Case{R"([{"__float__": "-Infinity"}, -Infinity])", -inf, -inf},
                        Case{"[0.001, 100.0]", 0.001, 100.0}}) {
    SCOPED_TRACE(k.limit);
    testing::TempDir tmp;
    std::ofstream(tmp.path() + "/config.json") << with("time_step_limit", k.limit);
    const ModelConfig c = load_model_config(tmp.path());
    EXPECT_EQ(c.mamba.dt_min, k.lo);
    EXPECT_EQ(c.mamba.dt_max, k.hi);
  }
  struct Bad {
    std::string text, what, why;
  };
  for (const Bad& k : {Bad{with("time_step_limit", "[0.0, NaN]"), "time_step_limit", "no NaN"},
                       Bad{with("time_step_limit", R"([{"__float__": "NaN"}, 1.0])"),
                           "time_step_limit", "no NaN"},
                       Bad{with("layer_norm_epsilon", "Infinity"), "'layer_norm_epsilon'",
                           "Infinity (a non-finite float as Python writes it)"},
                       Bad{with("layer_norm_epsilon", R"({"__float__": "NaN"})"),
                           "'layer_norm_epsilon'", "expected a finite number"},
                       Bad{with("n_groups", "-Infinity"), "'n_groups'", "expected an integer"},
                       Bad{with("time_step_limit", "[0.0, Infinit]"), "config.json",
                           "invalid JSON"}}) {
    SCOPED_TRACE(k.what);
    testing::TempDir tmp;
    std::ofstream(tmp.path() + "/config.json") << k.text;
    expect_error([&] { load_model_config(tmp.path()); },
                 {tmp.path() + "/config.json", k.what, k.why});
  }
}

}  // namespace
}  // namespace moex::model
