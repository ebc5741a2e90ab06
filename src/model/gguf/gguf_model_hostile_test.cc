// A GGUF model whose metadata or tensors disagree with what its arch needs must be refused with
// a moex::Error naming the key or tensor, quickly and without a large allocation (this binary
// replaces operator new to record the largest request); and the valid file it is made from
// loads, so every refusal below is the defect's and not the file's.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <new>

#include "core/error.h"
#include "model/gguf/gguf_model_test_util.h"

namespace moex::model {
namespace {

using gguf::testing::Bytes;
using testing_gguf::open_error;
using testing_gguf::TinyModel;

TEST(GgufModelHostile, ValidTinyFileLoads) {
  const TinyModel m;
  EXPECT_EQ(open_error(m, "valid"), "");
  const ModelConfig c = load_gguf_model_config(m.write("valid_cfg"));
  EXPECT_EQ(c.family, "qwen3_moe");
  EXPECT_EQ(c.num_layers, 1);
  EXPECT_EQ(c.hidden, 8);
  EXPECT_EQ(c.heads, 2);
  EXPECT_EQ(c.kv_heads, 1);
  EXPECT_EQ(c.head_dim, 4);
  EXPECT_EQ(c.vocab, 16);
  EXPECT_EQ(c.moe.num_experts, 2);
  EXPECT_EQ(c.moe.top_k, 1);
  EXPECT_TRUE(c.tie_word_embeddings);
}

struct Case {
  const char* id;
  std::function<void(TinyModel&)> edit;
  std::vector<std::string> expect;
};

TEST(GgufModelHostile, RefusedNamingTheKeyOrTensor) {
  const std::vector<Case> cases = {
      {"no_arch", [](TinyModel& m) { m.keys.erase("general.architecture"); },
       {"general.architecture", "missing"}},
      {"unknown_arch", [](TinyModel& m) { m.str("general.architecture", "bert"); },
       {"general.architecture", "bert", "qwen3moe"}},
      // Phi-3.5-MoE: llama.cpp runs another router and norm than the model (docs/gguf.md).
      {"phimoe_arch", [](TinyModel& m) { m.str("general.architecture", "phimoe"); },
       {"general.architecture", "phimoe", "sparsemixer", "LayerNorm"}},
      {"missing_expert_count", [](TinyModel& m) { m.keys.erase("qwen3moe.expert_count"); },
       {"qwen3moe.expert_count", "missing"}},
      {"missing_eps",
       [](TinyModel& m) { m.keys.erase("qwen3moe.attention.layer_norm_rms_epsilon"); },
       {"qwen3moe.attention.layer_norm_rms_epsilon", "missing"}},
      {"absurd_heads", [](TinyModel& m) { m.u32("qwen3moe.attention.head_count", 1u << 30); },
       {"qwen3moe.attention.head_count", "1073741824", "[1, 4096]"}},
      {"absurd_layers", [](TinyModel& m) { m.u64("qwen3moe.block_count", uint64_t{1} << 62); },
       {"qwen3moe.block_count", "[1, 1024]"}},
      {"more_layers_than_tensors", [](TinyModel& m) { m.u32("qwen3moe.block_count", 1000); },
       {"qwen3moe.block_count", "14 tensors, fewer than one per layer"}},
      {"two_layers_one_present", [](TinyModel& m) { m.u32("qwen3moe.block_count", 2); },
       {"missing tensor 'blk.1.attn_norm.weight'", "missing tensor 'blk.1.ffn_down_exps.weight'"}},
      {"absurd_experts", [](TinyModel& m) { m.u32("qwen3moe.expert_count", 1u << 31); },
       {"qwen3moe.expert_count", "[0, 16384]"}},
      {"no_experts", [](TinyModel& m) { m.u32("qwen3moe.expert_count", 0); },
       {"qwen3moe.expert_count", "no experts"}},
      {"used_above_count", [](TinyModel& m) { m.u32("qwen3moe.expert_used_count", 3); },
       {"qwen3moe.expert_used_count", "exceeds", "expert_count (2)"}},
      {"kv_heads_not_dividing", [](TinyModel& m) {
         m.u32("qwen3moe.attention.head_count", 3);
         m.u32("qwen3moe.attention.head_count_kv", 2);
       }, {"qwen3moe.attention.head_count_kv", "must divide"}},
      {"eps_negative", [](TinyModel& m) { m.f32("qwen3moe.attention.layer_norm_rms_epsilon", -1); },
       {"qwen3moe.attention.layer_norm_rms_epsilon", "positive"}},
      {"eps_wrong_type",
       [](TinyModel& m) { m.str("qwen3moe.attention.layer_norm_rms_epsilon", "x"); },
       {"qwen3moe.attention.layer_norm_rms_epsilon"}},
      {"rope_scaling", [](TinyModel& m) { m.str("qwen3moe.rope.scaling.type", "yarn"); },
       {"qwen3moe.rope.scaling.type", "not mapped"}},
      {"partial_rope", [](TinyModel& m) { m.u32("qwen3moe.rope.dimension_count", 2); },
       {"qwen3moe.rope.dimension_count", "partial RoPE"}},
      {"q_shape", [](TinyModel& m) { m.tensors["blk.0.attn_q.weight"] = {8, 12}; },
       {"blk.0.attn_q.weight", "[12, 8]", "expected [8, 8]"}},
      {"experts_shape", [](TinyModel& m) { m.tensors["blk.0.ffn_down_exps.weight"] = {4, 8, 3}; },
       {"blk.0.ffn_down_exps.weight", "[3, 8, 4]", "expected [2, 8, 4]"}},
      {"missing_router", [](TinyModel& m) { m.tensors.erase("blk.0.ffn_gate_inp.weight"); },
       {"missing tensor 'blk.0.ffn_gate_inp.weight'"}},
      {"extra_tensor", [](TinyModel& m) { m.tensors["blk.0.rope_freqs.weight"] = {2}; },
       {"blk.0.rope_freqs.weight", "nothing would read"}},
      {"embd_missing", [](TinyModel& m) { m.tensors.erase("token_embd.weight"); },
       {"token_embd.weight", "missing"}},
      {"embd_1d", [](TinyModel& m) { m.tensors["token_embd.weight"] = {128}; },
       {"token_embd.weight", "not 2-D"}},
      {"bos_out_of_vocab", [](TinyModel& m) { m.u32("tokenizer.ggml.bos_token_id", 16); },
       {"tokenizer.ggml.bos_token_id", "[0, 16)"}},
      {"key_length_odd", [](TinyModel& m) { m.u32("qwen3moe.attention.value_length", 8); },
       {"qwen3moe.attention.value_length", "key length 4"}},
  };
  for (const Case& c : cases) {
    TinyModel m;
    c.edit(m);
    const std::string what = open_error(m, c.id);
    ASSERT_FALSE(what.empty()) << c.id << ": loaded";
    for (const std::string& e : c.expect) {
      EXPECT_NE(what.find(e), std::string::npos) << c.id << ": '" << e << "' not in: " << what;
    }
  }
}

TEST(GgufModelHostile, LlamaWithoutExpertsIsRefused) {
  TinyModel m;
  std::map<std::string, std::function<void(Bytes&)>> keys;
  for (auto& [k, w] : m.keys)
    keys[k.rfind("qwen3moe.", 0) == 0 ? "llama." + k.substr(9) : k] = w;
  m.keys = keys;
  m.str("general.architecture", "llama");
  m.u32("llama.expert_count", 0);
  const std::string what = open_error(m, "llama_dense");
  EXPECT_NE(what.find("llama.expert_count"), std::string::npos) << what;
  EXPECT_NE(what.find("no experts"), std::string::npos) << what;
}

}  // namespace
}  // namespace moex::model
