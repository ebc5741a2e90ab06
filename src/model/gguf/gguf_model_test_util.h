// A tiny GGUF model written key by key for the model_gguf_test cases (hostile metadata and
// tensors, the glm4moe mapping): TinyModel and open_error, which loads it with the time and
// the largest allocation checked (the binary replaces operator new to record it).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/largest_allocation_test_util.h"
#include "io/gguf/gguf_test_util.h"
#include "model/gguf/gguf_model.h"

namespace moex::model::testing_gguf {

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
  // A model of `arch` with only the keys every architecture's tiny model shares (width 8,
  // 2 heads, 1 KV head, context 64, `layers` blocks, RMS epsilon `eps`) and no tensors; the
  // caller adds the rest.
  static TinyModel with_basics(const std::string& arch, uint32_t layers, float eps) {
    TinyModel m;
    m.keys.clear();
    m.tensors.clear();
    m.str("general.architecture", arch);
    const std::string a = arch + ".";
    m.u32(a + "block_count", layers);
    m.u32(a + "embedding_length", 8);
    m.u32(a + "attention.head_count", 2);
    m.u32(a + "attention.head_count_kv", 1);
    m.u32(a + "context_length", 64);
    m.f32(a + "attention.layer_norm_rms_epsilon", eps);
    return m;
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
  void boolean(const std::string& k, bool v) {
    keys[k] = [v](Bytes& b) { b.u32(7).u8(v ? 1 : 0); };
  }
  void i32_array(const std::string& k, const std::vector<int32_t>& v) {
    keys[k] = [v](Bytes& b) {
      b.u32(9).u32(5).u64(v.size());  // array of int32
      for (int32_t x : v) b.u32(uint32_t(x));
    };
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
inline std::string open_error(const TinyModel& m, const std::string& id) {
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

// One refusal per row: make() edited by the row's edit must fail to open (open_error's time
// and allocation bounds) with an error that contains every one of the row's strings.
using TinyEdit = std::function<void(TinyModel&)>;
using RefusalRows = std::vector<std::pair<TinyEdit, std::vector<std::string>>>;
inline void expect_refused(const std::function<TinyModel()>& make, const std::string& id,
                           const RefusalRows& rows) {
  int i = 0;
  for (const auto& [edit, expect] : rows) {
    TinyModel m = make();
    edit(m);
    const std::string what = open_error(m, id + std::to_string(i++));
    ASSERT_FALSE(what.empty()) << id << " case " << i << " loaded";
    for (const std::string& e : expect)
      EXPECT_NE(what.find(e), std::string::npos) << id << " case " << i << ": '" << e << "' in "
                                                 << what;
  }
}

}  // namespace moex::model::testing_gguf
