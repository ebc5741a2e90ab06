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
#include "core/largest_allocation_test_util.h"
#include "io/gguf/gguf_test_util.h"
#include "model/gguf/gguf_model.h"


namespace moex::model {
namespace {

using gguf::testing::Bytes;

// A tiny qwen3moe file: hidden 8, 2 heads of 4 (1 KV head), 2 experts of Dff 4, top-1, a
// vocabulary of 16, one layer, F32 tensors, tied embeddings. Tests edit `keys` / `tensors`.
struct TinyModel {
  // key -> writer of type id and value
  std::map<std::string, std::function<void(Bytes&)>> keys;
  std::map<std::string, std::vector<uint64_t>> tensors;  // name -> ne (ne[0] first)

  TinyModel() {
    str("general.architecture", "qwen3moe");
    u32("qwen3moe.block_count", 1);
    u32("qwen3moe.embedding_length", 8);
    u32("qwen3moe.attention.head_count", 2);
    u32("qwen3moe.attention.head_count_kv", 1);
    u32("qwen3moe.attention.key_length", 4);
    u32("qwen3moe.context_length", 64);
    f32("qwen3moe.attention.layer_norm_rms_epsilon", 1e-6f);
    u32("qwen3moe.expert_count", 2);
    u32("qwen3moe.expert_used_count", 1);
    u32("qwen3moe.expert_feed_forward_length", 4);
    tensors = {{"token_embd.weight", {8, 16}},      {"output_norm.weight", {8}},
               {"blk.0.attn_norm.weight", {8}},     {"blk.0.attn_q.weight", {8, 8}},
               {"blk.0.attn_k.weight", {8, 4}},     {"blk.0.attn_v.weight", {8, 4}},
               {"blk.0.attn_output.weight", {8, 8}}, {"blk.0.attn_q_norm.weight", {4}},
               {"blk.0.attn_k_norm.weight", {4}},   {"blk.0.ffn_norm.weight", {8}},
               {"blk.0.ffn_gate_inp.weight", {8, 2}}, {"blk.0.ffn_gate_exps.weight", {8, 4, 2}},
               {"blk.0.ffn_up_exps.weight", {8, 4, 2}}, {"blk.0.ffn_down_exps.weight", {4, 8, 2}}};
  }
  void u32(const std::string& k, uint32_t v) {
    keys[k] = [v](Bytes& b) { b.u32(4).u32(v); };
  }
  void u64(const std::string& k, uint64_t v) {
    keys[k] = [v](Bytes& b) { b.u32(10).u64(v); };
  }
  void f32(const std::string& k, float v) {
    keys[k] = [v](Bytes& b) { b.u32(6).f32(v); };
  }
  void str(const std::string& k, const std::string& v) {
    keys[k] = [v](Bytes& b) { b.u32(8).str(v); };
  }

  std::string bytes() const {
    Bytes b;
    b.header(tensors.size(), keys.size());
    for (const auto& [k, w] : keys) {
      b.str(k);
      w(b);
    }
    uint64_t offset = 0;
    std::vector<uint64_t> sizes;
    for (const auto& [name, ne] : tensors) {
      uint64_t n = 1;
      for (uint64_t d : ne) n *= d;
      b.tensor(name, ne, /*F32*/ 0, offset);
      sizes.push_back(n * 4);
      offset += (n * 4 + 31) / 32 * 32;
    }
    b.pad_to(32);
    float x = 0.01f;
    for (uint64_t s : sizes) {
      for (uint64_t i = 0; i < s / 4; ++i, x = -x * 1.01f) b.f32(x);
      b.pad_to(32);
    }
    return b.out;
  }

  std::string write(const std::string& name) const {
    const std::string path = ::testing::TempDir() + "/" + name + ".gguf";
    std::ofstream(path, std::ios::binary) << bytes();
    return path;
  }
};

// Opens the model (config and tensors) with allocation tracking; returns the error text, or
// "" when it loads. Checks the time and the largest allocation.
std::string open_error(const TinyModel& m, const std::string& id) {
  const std::string path = m.write(id);
  const size_t file_bytes = m.bytes().size();
  std::string what;
  moex::testing::LargestAllocation alloc;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    (void)open_gguf_model_checkpoint(path, {});
  } catch (const Error& e) {
    what = e.what();
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const size_t largest = alloc.stop();
  EXPECT_LT(ms, 500.0) << id;
  // The vocabulary-free tiny file is ~2 KB; the model's tables (module list, config) take a
  // few KB whatever the file holds, so the bound is absolute rather than a file multiple.
  EXPECT_LT(largest, std::max<size_t>(64 * file_bytes, size_t(1) << 20)) << id;
  if (!what.empty()) {
    EXPECT_NE(what.find(path), std::string::npos) << id << ": " << what;
  }
  return what;
}

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
