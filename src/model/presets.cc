// The synthetic-model presets: the real shapes of docs/background.md §4 (Hugging Face configs of
// the public checkpoints) and tiny models of the same structure for tests (a few MB each;
// Dff a multiple of 128 so that every group size divides every input width).
#include "model/presets.h"

#include "model/family_registry.h"
#include "model/tensor_table.h"
#include "tokenizer/synthetic_vocab.h"

namespace moex::model {

namespace {

std::vector<ModelPreset> make_presets() {
  std::vector<ModelPreset> v;
  auto add = [&](ModelPreset p) { v.push_back(std::move(p)); };
  ModelPreset p;

  // ---- Real shapes -------------------------------------------------------------------------
  p = {};
  p.name = "mixtral-8x7b", p.model_type = "mixtral", p.hidden = 4096, p.moe_dff = 14336;
  p.experts = 8, p.top_k = 2, p.layers = 32, p.heads = 32, p.kv_heads = 8, p.head_dim = 128;
  p.vocab = 32000, p.max_position = 32768;
  p.description = "Mixtral-8x7B: 8 experts top-2, Dff 14336";
  add(p);

  // openai/gpt-oss-20b and openai/gpt-oss-120b (config.json: hidden_size 2880,
  // intermediate_size 2880, 64 heads / 8 kv heads of head_dim 64, vocab_size 201088,
  // sliding_window 128 on alternate layers, rope_theta 150000 with YaRN factor 32).
  p = {};
  p.name = "gpt-oss-20b", p.model_type = "gpt_oss", p.hidden = 2880, p.moe_dff = 2880;
  p.experts = 32, p.top_k = 4, p.layers = 24, p.heads = 64, p.kv_heads = 8, p.head_dim = 64;
  p.vocab = 201088, p.max_position = 131072, p.expert_linear_bias = true;
  p.activation = "swiglu_oai";
  p.description = "gpt-oss-20b: 32 experts top-4 (swiglu_oai, biases), sinks, sliding 128";
  add(p);

  p.name = "gpt-oss-120b", p.experts = 128, p.layers = 36;
  p.description = "gpt-oss-120b: 128 experts top-4 (swiglu_oai, biases), sinks, sliding 128";
  add(p);

  // zai-org/GLM-4.5-Air and zai-org/GLM-4.5 (config.json: 96 heads / 8 kv heads of
  // head_dim 128, partial_rotary_factor 0.5, vocab_size 151552; Air: hidden 4096, 46 layers of
  // which 1 dense (intermediate 10944), 128 experts of 1408 top-8 + 1 shared; GLM-4.5: hidden
  // 5120, 92 layers of which 3 dense (12288), 160 experts of 1536 top-8 + 1 shared).
  p = {};
  p.name = "glm-4.5-air", p.model_type = "glm4_moe", p.hidden = 4096, p.moe_dff = 1408;
  p.experts = 128, p.top_k = 8, p.shared_dff = 1408, p.dense_dff = 10944, p.dense_layers = 1;
  p.layers = 46, p.heads = 96, p.kv_heads = 8, p.head_dim = 128, p.vocab = 151552;
  p.max_position = 131072;
  p.description = "GLM-4.5-Air: 128 experts top-8 (sigmoid + correction bias) + shared, Dff 1408";
  add(p);

  p.name = "glm-4.5", p.hidden = 5120, p.moe_dff = 1536, p.experts = 160, p.shared_dff = 1536;
  p.dense_dff = 12288, p.dense_layers = 3, p.layers = 92;
  p.description = "GLM-4.5: 160 experts top-8 (scaled 2.5) + shared, q/k norm, Dff 1536";
  add(p);

  // rednote-hilab/dots.llm1.inst (config.json: hidden_size 4096, 62 layers of which 1 dense
  // (intermediate_size 10944), 32 heads / 32 kv heads of head_dim 128, 128 experts of 1408
  // top-6 + 2 shared, routed_scaling_factor 2.5, vocab_size 152064, rope_theta 1e7).
  p = {};
  p.name = "dots.llm1", p.model_type = "dots1", p.hidden = 4096, p.moe_dff = 1408;
  p.experts = 128, p.top_k = 6, p.shared_dff = 2 * 1408, p.dense_dff = 10944, p.dense_layers = 1;
  p.layers = 62, p.heads = 32, p.kv_heads = 32, p.head_dim = 128, p.vocab = 152064;
  p.max_position = 32768;
  p.description = "dots.llm1: 128 experts top-6 (sigmoid + correction bias) + 2 shared, Dff 1408";
  add(p);

  // ibm-granite/granite-3.1-3b-a800m-instruct (config.json: hidden_size 1536, 32 layers, 24
  // heads / 8 kv heads (head_dim 64), 40 experts of intermediate_size 512 top-8, vocab 49155,
  // tied embeddings, rope_theta 1e7). The muP multipliers are granite-3.0-1b-a400m's
  // (docs/families.md); they change no shape.
  p = {};
  p.name = "granite-3.1-3b-a800m", p.model_type = "granitemoe", p.hidden = 1536, p.moe_dff = 512;
  p.experts = 40, p.top_k = 8, p.layers = 32, p.heads = 24, p.kv_heads = 8, p.head_dim = 64;
  p.vocab = 49155, p.max_position = 131072, p.tie_embeddings = true;
  p.description = "Granite-3.1-3B-A800M: 40 experts top-8, Dff 512, muP multipliers";
  add(p);

  // baidu/ERNIE-4.5-21B-A3B-PT (config.json as copies of it give it: hidden_size 2560, 28 layers
  // of which layer 0 dense (intermediate_size 12288), 20 heads / 4 kv heads of head_dim 128, 64
  // experts of 1536 top-6 + 2 shared, vocab_size 103424, rope_theta 500000, tied embeddings).
  p = {};
  p.name = "ernie-4.5-21b-a3b", p.model_type = "ernie4_5_moe", p.hidden = 2560;
  p.moe_dff = 1536, p.experts = 64, p.top_k = 6, p.shared_dff = 2 * 1536, p.dense_dff = 12288;
  p.dense_layers = 1, p.layers = 28, p.heads = 20, p.kv_heads = 4, p.head_dim = 128;
  p.vocab = 103424, p.max_position = 131072, p.tie_embeddings = true;
  p.description = "ERNIE-4.5-21B-A3B: 64 experts top-6 + 2 shared, Dff 1536, first layer dense";
  add(p);

  // tencent/Hunyuan-A13B-Instruct (config.json: hidden_size 4096, 32 layers, 32 heads / 8 kv
  // heads (head_dim 128), 64 experts of 3072 top-8 + 1 shared of intermediate_size 3072,
  // vocab_size 128167, rope_theta 10000 with rope_scaling alpha 1000, tied embeddings).
  p = {};
  p.name = "hunyuan-a13b", p.model_type = "hunyuan", p.hidden = 4096, p.moe_dff = 3072;
  p.experts = 64, p.top_k = 8, p.shared_dff = 3072, p.layers = 32, p.heads = 32, p.kv_heads = 8;
  p.head_dim = 128, p.vocab = 128167, p.max_position = 32768, p.tie_embeddings = true;
  p.description = "Hunyuan-A13B: 64 experts top-8 (softmax, not renormalized) + shared, Dff 3072";
  add(p);

  // inclusionAI/Ling-lite (config.json in the inclusionAI/Ling repository: hidden_size 2048, 28
  // layers, 16 heads / 4 kv heads (head_dim 128), 64 experts of 1408 top-6 + 2 shared, all
  // layers MoE, vocab_size 126464, rope_theta 600000, norm_head).
  p = {};
  p.name = "ling-lite", p.model_type = "bailing_moe", p.hidden = 2048, p.moe_dff = 1408;
  p.experts = 64, p.top_k = 6, p.shared_dff = 2 * 1408, p.dense_dff = 5632, p.layers = 28;
  p.heads = 16, p.kv_heads = 4, p.head_dim = 128, p.vocab = 126464, p.max_position = 16384;
  p.description = "Ling-lite: 64 experts top-6 (softmax) + 2 shared, Dff 1408, fused qkv";
  add(p);

  // google/gemma-4-26B-A4B (Hugging Face transformers convert_gemma4_weights.py, variant
  // gemma-4-26b-a4b, with Gemma4TextConfig's defaults: hidden 2816, 30 layers of types
  // ([sliding] * 5 + [full]) * 5, 16 heads, 8 kv heads of head_dim 256 on sliding layers and 2 of
  // global_head_dim 512 on full ones (attention_k_eq_v), dense MLP 2112 beside 128 experts of
  // 704 top-8, vocab 262144, sliding_window 1024, max_position_embeddings 262144, tied).
  p = {};
  p.name = "gemma-4-26b-a4b", p.model_type = "gemma4_text", p.hidden = 2816, p.moe_dff = 704;
  p.experts = 128, p.top_k = 8, p.dense_dff = 2112, p.layers = 30, p.heads = 16, p.kv_heads = 8;
  p.head_dim = 256, p.vocab = 262144, p.max_position = 262144, p.tie_embeddings = true;
  p.activation = "geglu";
  p.description = "Gemma-4 26B-A4B: 128 experts top-8 (GeGLU) beside a dense MLP, sliding/full";
  add(p);

  // MiniMaxAI/MiniMax-M2 (config.json: hidden_size 3072, 62 layers, 48 heads / 8 kv heads of
  // head_dim 128, rotary_dim 64, 256 experts of intermediate_size 1536 top-8, vocab 200064).
  p = {};
  p.name = "minimax-m2", p.model_type = "minimax", p.hidden = 3072, p.moe_dff = 1536;
  p.experts = 256, p.top_k = 8, p.layers = 62, p.heads = 48, p.kv_heads = 8, p.head_dim = 128;
  p.vocab = 200064, p.max_position = 196608;
  p.description = "MiniMax-M2: 256 experts top-8 (sigmoid + correction bias), partial RoPE";
  add(p);

  p = {};
  p.name = "phi-3.5-moe", p.model_type = "phimoe", p.hidden = 4096, p.moe_dff = 6400;
  p.experts = 16, p.top_k = 2, p.layers = 32, p.heads = 32, p.kv_heads = 8, p.head_dim = 128;
  p.vocab = 32064, p.max_position = 131072;
  p.description = "Phi-3.5-MoE: 16 experts top-2 (sparsemixer), LayerNorm, longrope, Dff 6400";
  add(p);

  p = {};
  p.name = "llama-4-scout", p.model_type = "llama4", p.hidden = 5120, p.moe_dff = 8192;
  p.experts = 16, p.top_k = 1, p.shared_dff = 8192, p.dense_dff = 16384, p.layers = 48;
  p.heads = 40, p.kv_heads = 8, p.head_dim = 128, p.vocab = 202048, p.max_position = 10485760;
    p.description = "Llama-4-Scout-17B-16E text: top-1 sigmoid + shared expert, NoPE every 4th layer";
  add(p);

  p = {};
  p.name = "lfm2-8b-a1b", p.model_type = "lfm2_moe", p.hidden = 2048, p.moe_dff = 1792;
  p.experts = 32, p.top_k = 4, p.dense_dff = 7168, p.dense_layers = 2, p.layers = 24;
  p.attention_layers = {2, 6, 10, 14, 18, 21};
  p.heads = 32, p.kv_heads = 8, p.head_dim = 64, p.vocab = 65536, p.max_position = 128000;
  p.tie_embeddings = true;
  p.description = "LFM2-8B-A1B: 6 attention + 18 short-conv layers, sigmoid routing, Dff 1792";
  add(p);

  p = {};
  p.name = "qwen3-30b-a3b", p.model_type = "qwen3_moe", p.hidden = 2048, p.moe_dff = 768;
  p.experts = 128, p.top_k = 8, p.dense_dff = 6144, p.layers = 48, p.heads = 32, p.kv_heads = 4;
  p.head_dim = 128, p.vocab = 151936, p.max_position = 40960;
    p.description = "Qwen3-30B-A3B: 128 experts top-8, Dff 768";
  add(p);

  p = {};
  p.name = "qwen1.5-moe-a2.7b", p.model_type = "qwen2_moe", p.hidden = 2048, p.moe_dff = 1408;
  p.experts = 60, p.top_k = 4, p.shared_dff = 5632, p.layers = 24, p.heads = 16, p.kv_heads = 16;
  p.head_dim = 128, p.vocab = 151936, p.max_position = 8192;
    p.description = "Qwen1.5-MoE-A2.7B: 60 experts top-4 + gated shared expert 5632, Dff 1408";
  add(p);

  p = {};
  p.name = "olmoe-1b-7b", p.model_type = "olmoe", p.hidden = 2048, p.moe_dff = 1024;
  p.experts = 64, p.top_k = 8, p.layers = 16, p.heads = 16, p.kv_heads = 16, p.head_dim = 128;
  p.vocab = 50304, p.max_position = 4096;
  p.description = "OLMoE-1B-7B: 64 experts top-8, full-width q/k norm, Dff 1024";
  add(p);

  // Qwen/Qwen3-Next-80B-A3B-Instruct (config.json: hidden_size 2048, 48 layers, every 4th
  // full attention (16 heads / 2 kv heads of head_dim 256, partial_rotary_factor 0.25,
  // rope_theta 5e6), the others Gated DeltaNet (16 key heads / 32 value heads of 128, conv
  // kernel 4), 512 experts of moe_intermediate_size 512 top-10 + a shared expert of 512,
  // intermediate_size 5120, vocab_size 151936, max_position_embeddings 262144).
  p = {};
  p.name = "qwen3-next-80b-a3b", p.model_type = "qwen3_next", p.hidden = 2048, p.moe_dff = 512;
  p.experts = 512, p.top_k = 10, p.shared_dff = 512, p.dense_dff = 5120, p.layers = 48;
  p.heads = 16, p.kv_heads = 2, p.head_dim = 256, p.vocab = 151936, p.max_position = 262144;
  p.linear_k_heads = 16, p.linear_v_heads = 32, p.linear_k_head_dim = 128;
  p.linear_v_head_dim = 128, p.full_attention_interval = 4;
  p.description = "Qwen3-Next-80B-A3B: Gated DeltaNet x3 + gated attention, 512 experts top-10 + shared";
  add(p);

  // Qwen/Qwen3.5-35B-A3B (text_config; these are also transformers' Qwen3_5_MoeTextConfig
  // defaults: hidden_size 2048, 40 layers, every 4th full attention (16 heads / 2 kv heads of
  // head_dim 256, rope_parameters rope_theta 1e7, partial_rotary_factor 0.25), the others Gated
  // DeltaNet (16 key heads / 32 value heads of 128, conv kernel 4), 256 experts of
  // moe_intermediate_size 512 top-8 + a shared expert of 512 on every layer, vocab_size 248320,
  // max_position_embeddings 262144).
  p = {};
  p.name = "qwen3.5-35b-a3b", p.model_type = "qwen3_5_moe", p.hidden = 2048, p.moe_dff = 512;
  p.experts = 256, p.top_k = 8, p.shared_dff = 512, p.layers = 40;
  p.heads = 16, p.kv_heads = 2, p.head_dim = 256, p.vocab = 248320, p.max_position = 262144;
  p.linear_k_heads = 16, p.linear_v_heads = 32, p.linear_k_head_dim = 128;
  p.linear_v_head_dim = 128, p.full_attention_interval = 4;
  p.description = "Qwen3.5-35B-A3B: Gated DeltaNet x3 + gated attention, 256 experts top-8 + shared";
  add(p);

  // nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 (config.json: hidden_size 2688, 52 blocks by
  // hybrid_override_pattern "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME": 23 Mamba-2
  // (64 heads x 64, ssm_state_size 128, n_groups 8, conv_kernel 4), 6 attention (32 heads /
  // 2 kv heads of head_dim 128), 23 MoE (128 experts of moe_intermediate_size 1856 top-6 +
  // a shared expert of 3712, relu2); intermediate_size 1856, vocab_size 131072,
  // max_position_embeddings 262144).
  p = {};
  p.name = "nemotron-3-nano-30b-a3b", p.model_type = "nemotron_h", p.hidden = 2688;
  p.moe_dff = 1856, p.experts = 128, p.top_k = 6, p.shared_dff = 3712, p.dense_dff = 1856;
  p.layers = 52, p.heads = 32, p.kv_heads = 2, p.head_dim = 128, p.vocab = 131072;
  p.max_position = 262144, p.activation = "relu2";
  p.hybrid_pattern = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME";
  p.mamba_heads = 64, p.mamba_head_dim = 64, p.ssm_state = 128, p.mamba_groups = 8;
  p.description =
      "Nemotron-3-Nano-30B-A3B: 23 Mamba-2 + 6 attention + 23 MoE blocks, 128 relu2 experts "
      "top-6 + shared";
  add(p);

  // deepseek-ai/DeepSeek-V3 (config.json: hidden_size 7168, 61 layers of which 3 dense
  // (intermediate_size 18432), 128 heads, q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim
  // 128, qk_rope_head_dim 64, v_head_dim 128, 256 experts of 2048 top-8 in 8 groups (4 kept)
  // + 1 shared, routed_scaling_factor 2.5, vocab_size 129280, max_position_embeddings 163840,
  // YaRN factor 40). DeepSeek-R1 has the same shape.
  p = {};
  p.name = "deepseek-v3", p.model_type = "deepseek_v3", p.hidden = 7168, p.moe_dff = 2048;
  p.experts = 256, p.top_k = 8, p.shared_dff = 2048, p.dense_dff = 18432, p.dense_layers = 3;
  p.layers = 61, p.heads = 128, p.kv_heads = 128, p.head_dim = 192, p.vocab = 129280;
  p.max_position = 163840, p.q_lora_rank = 1536, p.kv_lora_rank = 512;
  p.qk_nope_head_dim = 128, p.qk_rope_head_dim = 64, p.v_head_dim = 128;
  p.description = "DeepSeek-V3/R1: MLA (kv_lora 512), 256 experts top-8 in 8 groups + shared";
  add(p);

  // moonshotai/Kimi-K2-Instruct (config.json: model_type kimi_k2, the DeepSeek-V3 layout with
  // 64 heads, 1 dense layer, 384 experts of 2048 top-8 in 1 group + 1 shared,
  // routed_scaling_factor 2.827, vocab_size 163840, max_position_embeddings 131072,
  // rope_theta 50000 with YaRN factor 32, beta_fast 1).
  p.name = "kimi-k2", p.model_type = "kimi_k2", p.experts = 384, p.dense_layers = 1;
  p.heads = 64, p.kv_heads = 64, p.vocab = 163840, p.max_position = 131072;
  p.description = "Kimi-K2: MLA (64 heads, kv_lora 512), 384 experts top-8 + shared";
  add(p);

  // deepseek-ai/DeepSeek-V2 (config.json: model_type deepseek_v2, hidden_size 5120, 60 layers
  // of which the first dense (first_k_dense_replace 1, intermediate_size 12288), 128 heads,
  // q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim
  // 128, 160 experts of 1536 top-6 in 8 groups (3 kept, group_limited_greedy,
  // routed_scaling_factor 16.0) + 2 shared, vocab_size 102400, max_position_embeddings 163840,
  // YaRN factor 40 with mscale = mscale_all_dim = 0.707). DeepSeek-V2.5 and DeepSeek-Coder-V2
  // (Instruct) have the same shape.
  p = {};
  p.name = "deepseek-v2", p.model_type = "deepseek_v2", p.hidden = 5120, p.moe_dff = 1536;
  p.experts = 160, p.top_k = 6, p.shared_dff = 3072, p.dense_dff = 12288, p.dense_layers = 1;
  p.layers = 60, p.heads = 128, p.kv_heads = 128, p.head_dim = 192, p.vocab = 102400;
  p.max_position = 163840, p.q_lora_rank = 1536, p.kv_lora_rank = 512;
  p.qk_nope_head_dim = 128, p.qk_rope_head_dim = 64, p.v_head_dim = 128;
  p.description = "DeepSeek-V2/V2.5: MLA (kv_lora 512), 160 experts top-6 in 8 groups + 2 shared";
  add(p);

  // deepseek-ai/DeepSeek-V2-Lite (config.json: the same layout with hidden_size 2048, 27
  // layers (the first dense, intermediate_size 10944), 16 heads, q_lora_rank null (a plain
  // q_proj), 64 experts of 1408 top-6 (topk_method greedy, n_group 1, routed_scaling_factor
  // 1.0) + 2 shared; vocab, context, MLA head dims and YaRN as DeepSeek-V2).
  // DeepSeek-Coder-V2-Lite has the same shape. The dims agree with the model card and with the
  // V2-Lite configs NVIDIA's Megatron-Bridge and Google's MaxText ship (docs/families.md).
  p.name = "deepseek-v2-lite", p.hidden = 2048, p.moe_dff = 1408, p.experts = 64;
  p.shared_dff = 2816, p.dense_dff = 10944, p.layers = 27, p.heads = 16, p.kv_heads = 16;
  p.q_lora_rank = 0;
  p.description = "DeepSeek-V2-Lite: MLA (q_proj, kv_lora 512), 64 experts top-6 + 2 shared";
  add(p);

  // ---- Tiny test models (same structure, hidden 256) --------------------------------------
  const int64_t kTinyVocab = 1024;
  auto tiny = [&](ModelPreset t) {
    t.tiny = true;
    t.hidden = 256;
    t.vocab = kTinyVocab;
    t.max_position = 4096;
    add(std::move(t));
  };
  p = {};
  p.name = "tiny-qwen3-moe", p.model_type = "qwen3_moe", p.moe_dff = 128, p.experts = 8;
  p.top_k = 4, p.dense_dff = 512, p.dense_layers = 1, p.layers = 3, p.heads = 4, p.kv_heads = 2;
  p.head_dim = 64, p.description = "tiny Qwen3-MoE (first layer dense via mlp_only_layers)";
  tiny(p);

  p = {};
  p.name = "tiny-mixtral", p.model_type = "mixtral", p.moe_dff = 384, p.experts = 8, p.top_k = 2;
  p.layers = 2, p.heads = 4, p.kv_heads = 2, p.head_dim = 64, p.description = "tiny Mixtral";
  tiny(p);

  p = {};
  p.name = "tiny-olmoe", p.model_type = "olmoe", p.moe_dff = 128, p.experts = 8, p.top_k = 4;
  p.layers = 2, p.heads = 4, p.kv_heads = 4, p.head_dim = 64, p.description = "tiny OLMoE";
  tiny(p);

  p.name = "tiny-olmoe-bias", p.expert_linear_bias = true;
  p.description = "tiny OLMoE with mlp_bias (biases on every expert projection)";
  tiny(p);

  p = {};
  p.name = "tiny-qwen2-moe", p.model_type = "qwen2_moe", p.moe_dff = 128, p.experts = 8;
  p.top_k = 4, p.shared_dff = 512, p.layers = 2, p.heads = 4, p.kv_heads = 4, p.head_dim = 64;
  p.description = "tiny Qwen1.5-MoE (gated shared expert)";
  tiny(p);

  p = {};
  p.name = "tiny-phimoe", p.model_type = "phimoe", p.moe_dff = 256, p.experts = 8, p.top_k = 2;
  p.layers = 2, p.heads = 4, p.kv_heads = 2, p.head_dim = 64;
  p.description = "tiny Phi-3.5-MoE (LayerNorm, biases, longrope, sparsemixer)";
  tiny(p);

  p = {};
  p.name = "tiny-llama4", p.model_type = "llama4", p.moe_dff = 256, p.experts = 8, p.top_k = 1;
  p.shared_dff = 256, p.dense_dff = 512, p.layers = 4, p.heads = 4, p.kv_heads = 2;
  p.head_dim = 64, p.description = "tiny Llama-4 (4 layers: 3 chunked RoPE + 1 NoPE)";
  tiny(p);

  p = {};
  p.name = "tiny-gpt-oss", p.model_type = "gpt_oss", p.moe_dff = 128, p.experts = 8;
  p.top_k = 4, p.layers = 4, p.heads = 4, p.kv_heads = 2, p.head_dim = 64;
  p.expert_linear_bias = true, p.activation = "swiglu_oai";
  p.description = "tiny gpt-oss (sliding window 8 / full layers, sinks, swiglu_oai, biases)";
  tiny(p);

  p = {};
  p.name = "tiny-glm4-moe", p.model_type = "glm4_moe", p.moe_dff = 128, p.experts = 8;
  p.top_k = 4, p.shared_dff = 128, p.dense_dff = 512, p.dense_layers = 1, p.layers = 3;
  p.heads = 4, p.kv_heads = 2, p.head_dim = 64;
  p.description = "tiny GLM-4.5 (first layer dense, 2 expert groups, shared expert, partial RoPE)";
  tiny(p);

  p = {};
  p.name = "tiny-dots1", p.model_type = "dots1", p.moe_dff = 128, p.experts = 8, p.top_k = 4;
  p.shared_dff = 256, p.dense_dff = 512, p.dense_layers = 1, p.layers = 3, p.heads = 4;
  p.kv_heads = 2, p.head_dim = 64;
  p.description = "tiny dots.llm1 (first layer dense, 2 expert groups, 2 shared experts)";
  tiny(p);

  p = {};
  p.name = "tiny-granitemoe", p.model_type = "granitemoe", p.moe_dff = 128, p.experts = 8;
  p.top_k = 4, p.layers = 2, p.heads = 4, p.kv_heads = 2, p.head_dim = 64;
  p.tie_embeddings = true;
  p.description = "tiny Granite MoE (muP multipliers, attention scale 0.1, q/k/v/o biases)";
  tiny(p);

  p = {};
  p.name = "tiny-ernie4-5-moe", p.model_type = "ernie4_5_moe", p.moe_dff = 128, p.experts = 8;
  p.top_k = 4, p.shared_dff = 256, p.dense_dff = 512, p.dense_layers = 1, p.layers = 3;
  p.heads = 4, p.kv_heads = 2, p.head_dim = 64, p.tie_embeddings = true;
  p.description = "tiny ERNIE-4.5 MoE (first layer dense, interleaved RoPE, 2 shared experts)";
  tiny(p);

  p = {};
  p.name = "tiny-hunyuan", p.model_type = "hunyuan", p.moe_dff = 128, p.experts = 8, p.top_k = 4;
  p.shared_dff = 256, p.layers = 2, p.heads = 4, p.kv_heads = 2, p.head_dim = 64;
  p.tie_embeddings = true;
  p.description = "tiny Hunyuan-A13B (q/k norm after alpha-NTK RoPE, unnormalized top-k, shared MLP)";
  tiny(p);

  p = {};
  p.name = "tiny-bailing-moe", p.model_type = "bailing_moe", p.moe_dff = 128, p.experts = 8;
  p.top_k = 4, p.shared_dff = 128, p.dense_dff = 512, p.dense_layers = 1, p.layers = 3;
  p.heads = 4, p.kv_heads = 2, p.head_dim = 64;
  p.description = "tiny Ling (fused qkv, sigmoid + bias groups, partial RoPE, norm_head)";
  tiny(p);

  p = {};
  p.name = "tiny-gemma4", p.model_type = "gemma4_text", p.moe_dff = 128, p.experts = 8;
  p.top_k = 3, p.dense_dff = 256, p.layers = 4, p.heads = 4, p.kv_heads = 2, p.head_dim = 64;
  p.tie_embeddings = true, p.activation = "geglu";
  p.description = "tiny Gemma-4 MoE (sliding 64-dim / full 128-dim k=v layers alternating, window 8, dense + experts)";
  tiny(p);
  p.name = "tiny-gemma4-wrapped", p.model_type = "gemma4";
  p.description = "tiny-gemma4 in the multimodal wrapper's config (text_config, language_model.*)";
  tiny(p);

  p = {};
  p.name = "tiny-minimax", p.model_type = "minimax", p.moe_dff = 128, p.experts = 8;
  p.top_k = 4, p.layers = 2, p.heads = 4, p.kv_heads = 2, p.head_dim = 64;
  p.description = "tiny MiniMax-M2 (full-width q/k norm, partial RoPE, sigmoid + bias routing)";
  tiny(p);

  p = {};
  p.name = "tiny-qwen3-next", p.model_type = "qwen3_next", p.moe_dff = 128, p.experts = 8;
  p.top_k = 4, p.shared_dff = 128, p.dense_dff = 512, p.dense_layers = 1, p.layers = 4;
  p.heads = 4, p.kv_heads = 2, p.head_dim = 64, p.linear_k_heads = 2, p.linear_v_heads = 4;
  p.linear_k_head_dim = 32, p.linear_v_head_dim = 32, p.full_attention_interval = 2;
  p.description = "tiny Qwen3-Next (2 Gated DeltaNet + 2 gated attention layers, first FFN dense)";
  tiny(p);

  p = {};
  p.name = "tiny-qwen3-5-moe", p.model_type = "qwen3_5_moe", p.moe_dff = 128, p.experts = 8;
  p.top_k = 4, p.shared_dff = 128, p.layers = 4, p.heads = 4, p.kv_heads = 2, p.head_dim = 64;
  p.linear_k_heads = 2, p.linear_v_heads = 4, p.linear_k_head_dim = 32;
  p.linear_v_head_dim = 32, p.full_attention_interval = 2;
  p.description = "tiny Qwen3.5-MoE (text_config, 2 Gated DeltaNet + 2 gated attention layers)";
  tiny(p);

  p = {};
  p.name = "tiny-nemotron-h", p.model_type = "nemotron_h", p.moe_dff = 128, p.experts = 8;
  p.top_k = 4, p.shared_dff = 256, p.dense_dff = 512, p.layers = 7, p.heads = 4, p.kv_heads = 2;
  p.head_dim = 64, p.activation = "relu2", p.hybrid_pattern = "MEM*E-M";
  p.mamba_heads = 8, p.mamba_head_dim = 32, p.ssm_state = 16, p.mamba_groups = 2;
  p.description = "tiny Nemotron-H (blocks M E M * E - M: Mamba-2, relu2 MoE + shared, attention, MLP)";
  tiny(p);

  p = {};
  p.name = "tiny-deepseek-v3", p.model_type = "deepseek_v3", p.moe_dff = 128, p.experts = 8;
  p.top_k = 3, p.shared_dff = 128, p.dense_dff = 512, p.dense_layers = 1, p.layers = 4;
  p.heads = 4, p.kv_heads = 4, p.head_dim = 96, p.q_lora_rank = 128, p.kv_lora_rank = 128;
  p.qk_nope_head_dim = 64, p.qk_rope_head_dim = 32, p.v_head_dim = 64;
  p.description = "tiny DeepSeek-V3 (MLA with q LoRA and YaRN, first FFN dense, 2 expert groups, shared)";
  tiny(p);

  p.name = "tiny-deepseek-v3-q-proj", p.q_lora_rank = 0;
  p.description = "tiny DeepSeek-V3 without q LoRA (q_proj, as DeepSeek-V2-Lite)";
  tiny(p);

  p = {};
  p.name = "tiny-deepseek-v2", p.model_type = "deepseek_v2", p.moe_dff = 128, p.experts = 8;
  p.top_k = 3, p.shared_dff = 128, p.dense_dff = 512, p.dense_layers = 1, p.layers = 4;
  p.heads = 4, p.kv_heads = 4, p.head_dim = 96, p.q_lora_rank = 128, p.kv_lora_rank = 128;
  p.qk_nope_head_dim = 64, p.qk_rope_head_dim = 32, p.v_head_dim = 64;
  p.description =
      "tiny DeepSeek-V2 (MLA with q LoRA, one kv_b_proj, YaRN; first FFN dense; softmax "
      "routing over 2 groups ranked by their best, 1 kept; shared)";
  tiny(p);

  p.name = "tiny-deepseek-v2-lite", p.q_lora_rank = 0;
  p.description = "tiny DeepSeek-V2-Lite (q_proj, plain greedy top-k)";
  tiny(p);

  p = {};
  p.name = "tiny-lfm2-moe", p.model_type = "lfm2_moe", p.moe_dff = 128, p.experts = 8;
  p.top_k = 4, p.dense_dff = 512, p.dense_layers = 1, p.layers = 4, p.attention_layers = {1, 3};
  p.heads = 4, p.kv_heads = 2, p.head_dim = 64, p.tie_embeddings = true;
  p.description = "tiny LFM2-MoE (2 attention + 2 short-conv layers, first FFN dense)";
  tiny(p);
  return v;
}

}  // namespace

const std::vector<ModelPreset>& all_presets() {
  static const std::vector<ModelPreset> presets = make_presets();
  return presets;
}

const ModelPreset* find_preset(std::string_view name) {
  for (const ModelPreset& p : all_presets())
    if (p.name == name) return &p;
  return nullptr;
}

int64_t synthetic_eos_id(int64_t vocab) {
  return vocab - SyntheticTokenizerArgs{}.num_special_tokens;  // <|endoftext|>
}

int64_t preset_parameter_count(const ModelPreset& p) {
  const ModelConfig cfg = parse_model_config(preset_config_json(p), "preset " + p.name);
  int64_t n = 0;
  for (const ModuleSpec& m : module_table(cfg)) n += m.parameter_count();
  return n;
}

}  // namespace moex::model
