// Helpers of the engine tests: tiny synthetic checkpoints written by the model library's
// make-model code, engine options from a --fused value, and logits as a vector.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/testing/temp_dir.h"
#include "model/checkpoint_plan.h"
#include "model/engine/engine.h"
#include "model/family_registry.h"
#include "model/presets.h"
#include "model/synth_weights.h"
#include "moe/dispatch_policy.h"

namespace moex::model::engine::test {

// Writes preset `preset` (num_layers 0: the preset's) as an f32 checkpoint into out_dir.
inline std::string write_tiny_preset(const std::string& preset, const std::string& out_dir,
                                     int64_t num_layers = 0, DType dtype = DType::F32) {
  const ModelPreset* p = find_preset(preset);
  EXPECT_NE(p, nullptr) << preset;
  SynthArgs args;
  args.out_dir = out_dir;
  write_synthetic_checkpoint(plan_preset_checkpoint(*p, num_layers, SynthQuant{}, dtype), args);
  return args.out_dir;
}

// Two logits vectors equal bit for bit (same length, same bytes).
inline bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

inline nlohmann::json read_config(const std::string& dir) {
  return nlohmann::json::parse(std::ifstream(dir + "/config.json"));
}
inline void write_config(const std::string& dir, const nlohmann::json& j) {
  std::ofstream(dir + "/config.json") << j.dump(1);
}

// Every model family's tiny preset (arch/families.def), which the engine tests run on, as a
// gtest parameter list.
inline auto tiny_families() { return ::testing::ValuesIn(tiny_family_presets()); }

// write_tiny_preset, with tiny-llama4's attention chunk cut to 4 tokens so that the chunked
// attention's boundaries fall inside short prompts.
inline std::string write_tiny_family(const std::string& preset, const std::string& out_dir) {
  const std::string dir = write_tiny_preset(preset, out_dir);
  if (preset == "tiny-llama4") {
    nlohmann::json j = read_config(dir);
    j["text_config"]["attention_chunk_size"] = 4;
    write_config(dir, j);
  }
  return dir;
}

// The checkpoint `write(dir)` writes under `key`, written once per test process (into a
// directory removed at exit) for the tests that only open it.
inline const std::string& shared_checkpoint(
    const std::string& key, const std::function<std::string(const std::string&)>& write) {
  static moex::testing::TempDir root("moex_shared_tiny");
  static std::map<std::string, std::string> written;
  auto it = written.find(key);
  if (it == written.end()) it = written.emplace(key, write(root.file(key))).first;
  return it->second;
}

// write_tiny_family's checkpoint of `preset`, shared: the per-family suites open each family's
// checkpoint five times, and writing it is a large part of their time under ASan.
inline const std::string& shared_tiny_family(const std::string& preset) {
  return shared_checkpoint(preset, [&](const std::string& dir) {
    return write_tiny_family(preset, dir);
  });
}

inline EngineOptions options_for_fused(const char* fused) {
  EngineOptions o;
  moe::RawFusedSettings raw;
  raw.flag_fused = fused;
  o.fused = moe::resolve_fused_settings(raw);
  return o;
}

// n token ids spread over the vocabulary, different for each seed.
inline std::vector<int32_t> prompt_of(int64_t n, int64_t seed, int64_t vocab) {
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back(int32_t((i * 37 + seed * 101 + 11) % vocab));
  return ids;
}

// The greedy token: the first index of the largest logit.
inline int32_t argmax(const float* logits, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (logits[i] > logits[best]) best = i;
  return int32_t(best);
}

inline std::vector<float> logits_of(const float* logits, const Engine& e) {
  return std::vector<float>(logits, logits + e.vocab());
}

}  // namespace moex::model::engine::test
