// Test checkpoints with a multi-token-prediction module (model/mtp_plan.h), its own parts random
// with a fixed seed: for glm4_moe / deepseek_v3 a tiny preset written with one more layer, that
// layer's tensors becoming the module's decoder layer (no embedding copy: the main one serves);
// for qwen3_next / qwen3_5_moe mtp.* with the tensors of a main attention layer (and of a main
// layer with the module's kind of MLP) as mtp.layers.0.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "io/checkpoint.h"
#include "io/safetensors_writer.h"
#include "model/engine/engine_test_util.h"
#include "model/presets.h"

namespace moex::model::engine::test {

// `count` values centre +- spread from a fixed generator.
inline std::vector<float> mtp_test_values(uint64_t& state, int64_t count, float centre,
                                          float spread) {
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    x = centre + spread * (float(int64_t(state >> 40) % 2001 - 1000) / 1000.f);
  }
  return v;
}

// The module's own parts (name -> shape, values) written as F32 to DIR/model-mtp.safetensors,
// with the raw tensors `copies` (new name -> a view of the main checkpoint) after them.
inline void write_mtp_file(const std::string& dir,
                           const std::map<std::string, std::pair<std::vector<int64_t>,
                                                                 std::vector<float>>>& own,
                           const std::map<std::string, const io::TensorInfo*>& copies = {}) {
  io::SafetensorsWriter w(dir + "/model-mtp.safetensors");
  for (const auto& [name, t] : own) w.declare({name, DType::F32, t.first});
  for (const auto& [name, t] : copies) w.declare({name, t->dtype, t->shape});
  for (const auto& [name, t] : own) w.write(name, t.second.data(), t.second.size() * sizeof(float));
  for (const auto& [name, t] : copies) w.write(name, t->data, t->nbytes);
  w.finish();
}

// glm4_moe / deepseek_v3: `preset` with one more layer, whose tensors become the module's
// decoder layer, plus enorm, hnorm, eh_proj and shared_head.
inline std::string write_nextn_checkpoint(const std::string& preset, const std::string& dir) {
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
  write_mtp_file(dir, {{pre + ".enorm.weight", {{H}, mtp_test_values(state, H, 1.f, 0.2f)}},
                       {pre + ".hnorm.weight", {{H}, mtp_test_values(state, H, 1.f, 0.2f)}},
                       {pre + ".eh_proj.weight",
                        {{H, 2 * H}, mtp_test_values(state, H * 2 * H, 0.f, 0.1f)}},
                       {pre + ".shared_head.norm.weight",
                        {{H}, mtp_test_values(state, H, 1.f, 0.2f)}},
                       {pre + ".shared_head.head.weight",
                        {{V, H}, mtp_test_values(state, V * H, 0.f, 0.1f)}}});
  return dir;
}

// qwen3_next / qwen3_5_moe: mtp.layers.0 takes the attention and norms of the first main
// attention layer and the MLP of the first main layer with the module's kind of MLP (a dense
// one for tiny-qwen3-next, whose mlp_only_layers holds 0; experts for tiny-qwen3-5-moe), plus
// random fc, pre_fc norms and norm; config.json's quantization entries of the copied modules
// are given to their copies.
inline std::string write_mtp_prefix_checkpoint(const std::string& preset,
                                               const std::string& dir) {
  write_tiny_preset(preset, dir);
  nlohmann::json top = read_config(dir);
  const bool qwen35 = top.contains("text_config");
  nlohmann::json& j = qwen35 ? top["text_config"] : top;
  const int64_t H = j["hidden_size"], interval = j["full_attention_interval"];
  const std::string main = qwen35 ? "language_model.model.layers." : "model.layers.";
  bool dense_module = false;
  if (j.contains("mlp_only_layers"))
    for (const auto& i : j["mlp_only_layers"]) dense_module = dense_module || i == 0;
  const std::string attn = main + std::to_string(interval - 1) + ".";
  const std::string mlp = main + (dense_module ? "0" : std::to_string(interval - 1)) + ".mlp.";
  if (qwen35) j["mtp_num_hidden_layers"] = 1;
  // Keep the checkpoint open while its views are copied.
  std::filesystem::rename(dir + "/model.safetensors", dir + "/model-main.safetensors");
  const io::Checkpoint ck = io::Checkpoint::open(dir);
  std::map<std::string, const io::TensorInfo*> copies;
  for (const std::string& name : ck.names()) {
    std::string to;
    if (name.rfind(mlp, 0) == 0)
      to = "mtp.layers.0.mlp." + name.substr(mlp.size());
    else if (name.rfind(attn, 0) == 0 && name.find(".mlp.") == std::string::npos)
      to = "mtp.layers.0." + name.substr(attn.size());
    if (!to.empty()) copies[to] = ck.find(name);
  }
  for (const char* key : {"quantization", "quantization_config"}) {
    if (!top.contains(key)) continue;
    nlohmann::json extra = nlohmann::json::object();
    for (const auto& [module, q] : top[key].items()) {
      if (!q.is_object()) continue;
      if (module.rfind(mlp, 0) == 0) extra["mtp.layers.0.mlp." + module.substr(mlp.size())] = q;
      if (module.rfind(attn, 0) == 0 && module.find(".mlp.") == std::string::npos)
        extra["mtp.layers.0." + module.substr(attn.size())] = q;
    }
    top[key].update(extra);
  }
  write_config(dir, top);
  uint64_t state = 54321;
  write_mtp_file(dir,
                 {{"mtp.pre_fc_norm_embedding.weight", {{H}, mtp_test_values(state, H, 1.f, 0.2f)}},
                  {"mtp.pre_fc_norm_hidden.weight", {{H}, mtp_test_values(state, H, 1.f, 0.2f)}},
                  {"mtp.fc.weight", {{H, 2 * H}, mtp_test_values(state, H * 2 * H, 0.f, 0.1f)}},
                  {"mtp.norm.weight", {{H}, mtp_test_values(state, H, 1.f, 0.2f)}}},
                 copies);
  return dir;
}

inline std::string write_mtp_checkpoint(const std::string& preset, const std::string& dir) {
  const std::string type = find_preset(preset)->model_type;
  if (type == "qwen3_next" || type == "qwen3_5_moe") return write_mtp_prefix_checkpoint(preset, dir);
  return write_nextn_checkpoint(preset, dir);
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
