// Test checkpoints with a multi-token-prediction module (model/mtp_plan.h): a tiny preset
// written with one more layer, that layer's tensors becoming the module's decoder layer, plus the
// module's own tensors, random with a fixed seed (no embedding copy: the main one serves).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "io/safetensors_writer.h"
#include "model/engine/engine_test_util.h"
#include "model/presets.h"

namespace moex::model::engine::test {

// `preset` with one more layer, whose tensors become the module's decoder layer, plus the
// module's own tensors (random, a fixed seed; no embedding copy, so the main one serves).
inline std::string write_mtp_checkpoint(const std::string& preset, const std::string& dir) {
  const ModelPreset* p = find_preset(preset);
  write_tiny_preset(preset, dir, p->layers + 1);
  nlohmann::json j = read_config(dir);
  const int64_t n = j["num_hidden_layers"].get<int64_t>() - 1;
  const int64_t H = j["hidden_size"], V = j["vocab_size"];
  j["num_hidden_layers"] = n;
  j["num_nextn_predict_layers"] = 1;
  write_config(dir, j);
  // moex reads model.safetensors alone when it exists; two files are read as a set.
  std::filesystem::rename(dir + "/model.safetensors", dir + "/model-main.safetensors");
  const std::string pre = "model.layers." + std::to_string(n);
  uint64_t state = 12345;
  auto values = [&](int64_t count, float centre, float spread) {
    std::vector<float> v(static_cast<size_t>(count));
    for (float& x : v) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      x = centre + spread * (float(int64_t(state >> 40) % 2001 - 1000) / 1000.f);
    }
    return v;
  };
  const std::map<std::string, std::vector<float>> tensors = {
      {pre + ".enorm.weight", values(H, 1.f, 0.2f)},
      {pre + ".hnorm.weight", values(H, 1.f, 0.2f)},
      {pre + ".eh_proj.weight", values(H * 2 * H, 0.f, 0.1f)},
      {pre + ".shared_head.norm.weight", values(H, 1.f, 0.2f)},
      {pre + ".shared_head.head.weight", values(V * H, 0.f, 0.1f)}};
  const std::map<std::string, std::vector<int64_t>> shapes = {
      {pre + ".enorm.weight", {H}},
      {pre + ".hnorm.weight", {H}},
      {pre + ".eh_proj.weight", {H, 2 * H}},
      {pre + ".shared_head.norm.weight", {H}},
      {pre + ".shared_head.head.weight", {V, H}}};
  io::SafetensorsWriter w(dir + "/model-mtp.safetensors");
  for (const auto& [name, v] : tensors) w.declare({name, DType::F32, shapes.at(name)});
  for (const auto& [name, v] : tensors) w.write(name, v.data(), v.size() * sizeof(float));
  w.finish();
  return dir;
}

inline const std::string& mtp_checkpoint(const std::string& preset) {
  return shared_checkpoint("mtp-" + preset, [&](const std::string& dir) {
    return write_mtp_checkpoint(preset, dir);
  });
}

// The module's logits of every row of `text` (rows 0..size-2), its rows run one at a time
// after one every-row pass of the main model.
inline std::vector<std::vector<float>> module_rows(Engine& e, const std::vector<int32_t>& text) {
  e.reset();
  std::vector<float> hidden;
  {
    const Engine::HiddenCapture capture(e, &hidden);
    e.forward_every_row(e.sequence(), text.data(), int64_t(text.size()) - 1);
  }
  const int64_t H = e.config().hidden, V = e.vocab();
  auto seq = e.new_mtp_sequence();
  std::vector<std::vector<float>> rows;
  for (size_t p = 0; p + 1 < text.size(); ++p) {
    const float* l = e.mtp_forward(*seq, &text[p + 1], hidden.data() + p * size_t(H), 1);
    rows.emplace_back(l, l + V);
  }
  return rows;
}

}  // namespace moex::model::engine::test
