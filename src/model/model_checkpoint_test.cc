// Loading checks: a synthetic checkpoint passes; a config that disagrees with the tensors, a
// missing tensor, wrong quantization and per-expert Hugging Face layouts are reported by name
// with expected vs found.
#include <gtest/gtest.h>

#include <fstream>

#include "io/safetensors_writer.h"
#include "model/checkpoint_plan.h"
#include "model/model_checkpoint.h"
#include "model/model_test_util.h"
#include "model/moe_layer_info.h"
#include "model/presets.h"
#include "model/synth_weights.h"

namespace moex::model {
namespace {

using testing::expect_error;
using testing::TempDir;

void write_config(const std::string& dir, const nlohmann::json& j) {
  std::ofstream(dir + "/config.json") << j.dump(2);
}

// Writes zero-filled tensors (the checks never read values).
void write_tensors(const std::string& dir, const std::vector<TensorRecord>& tensors) {
  io::ShardedCheckpointWriter w(dir);
  for (const TensorRecord& t : tensors) w.declare({t.name, t.dtype, t.shape});
  for (const TensorRecord& t : tensors) {
    const std::vector<uint8_t> zeros(size_t(t.bytes()));
    w.write(t.name, zeros.data(), zeros.size());
  }
  w.finish();
}

TEST(ModelCheckpoint, SyntheticCheckpointPasses) {
  TempDir tmp;
  const CheckpointPlan plan = plan_preset_checkpoint(*find_preset("tiny-olmoe"), 0, {}, DType::BF16);
  SynthArgs a;
  a.out_dir = tmp.path();
  write_synthetic_checkpoint(plan, a);
  const ModelCheckpoint m = open_model_checkpoint(tmp.path());
  EXPECT_EQ(m.tensors.size(), plan.tensors.size());
  EXPECT_TRUE(m.unknown_tensors.empty());
  EXPECT_TRUE(m.per_expert_layouts.empty());
  EXPECT_TRUE(m.inferred_quant.empty());  // the section names every module it does not cover
  EXPECT_EQ(inferred_quant_warning(m, tmp.path()), "");
  EXPECT_EQ(m.module_quant("model.layers.0.mlp.gate"), (io::ModuleQuant{8, 64, "affine"}));
  EXPECT_EQ(m.module_quant("model.layers.1.mlp.switch_mlp.up_proj"), (io::ModuleQuant{4, 64, "affine"}));
  EXPECT_FALSE(m.module_quant("model.norm").has_value());
  EXPECT_EQ(m.tensor("model.layers.1.mlp.switch_mlp.up_proj", "scales").shape, (std::vector<int64_t>{8, 128, 4}));
  const auto infos = moe_layer_infos(m);
  ASSERT_EQ(infos.size(), 2u);
  EXPECT_EQ(infos[1].dff, 128);
  EXPECT_TRUE(infos[1].stacked);
  EXPECT_EQ(infos[1].down->bits, 4);
}

TEST(ModelCheckpoint, ConfigDisagreeingWithTensorsNamesTensorExpectedAndFound) {
  TempDir tmp;
  const CheckpointPlan plan = plan_preset_checkpoint(*find_preset("tiny-qwen3-moe"), 0, {}, DType::BF16);
  write_tensors(tmp.path(), plan.tensors);
  nlohmann::json j = plan.config_json;
  j["moe_intermediate_size"] = 256;
  write_config(tmp.path(), j);
  expect_error([&] { open_model_checkpoint(tmp.path()); },
               {tmp.path(), "model.layers.1.mlp.switch_mlp.gate_proj.weight", "expected U32 [8, 256, 32]",
                "found U32 [8, 128, 32]"});
  j = plan.config_json;
  j["num_hidden_layers"] = 4;
  write_config(tmp.path(), j);
  expect_error([&] { open_model_checkpoint(tmp.path()); },
               {"missing tensor 'model.layers.3.self_attn.q_proj.weight'"});
  j = plan.config_json;  // an override naming the module is believed over the shapes
  j["quantization"]["model.embed_tokens"] = {{"bits", 8}, {"group_size", 64}};
  j["quantization_config"] = j["quantization"];
  write_config(tmp.path(), j);
  expect_error([&] { open_model_checkpoint(tmp.path()); },
               {"model.embed_tokens.weight", "expected U32 [1024, 64]", "bits 8"});
  j = plan.config_json;
  j.erase("quantization");
  j.erase("quantization_config");
  write_config(tmp.path(), j);
  expect_error([&] { open_model_checkpoint(tmp.path()); }, {"no quantization section"});
}

// mlx-lm's rule (docs/quant_formats.md, "Checkpoints"): a module the quantization section does
// not name is read with the format its packed shapes imply, not the global setting; when the
// shapes imply nothing supported, the global setting names the mismatch.
TEST(ModelCheckpoint, UnlistedModulesTakeTheirPackedFormat) {
  TempDir tmp;
  SynthQuant q;
  q.down_bits = 6;
  const CheckpointPlan plan = plan_preset_checkpoint(*find_preset("tiny-qwen3-moe"), 0, q, DType::BF16);
  write_tensors(tmp.path(), plan.tensors);
  nlohmann::json j = plan.config_json;
  j["quantization"] = {{"group_size", 64}, {"bits", 8}};  // says 8; tensors are 4, 6 and 8
  j["quantization_config"] = j["quantization"];
  write_config(tmp.path(), j);
  const ModelCheckpoint m = open_model_checkpoint(tmp.path());
  EXPECT_EQ(m.module_quant("model.layers.1.mlp.switch_mlp.up_proj"), (io::ModuleQuant{4, 64, "affine"}));
  EXPECT_EQ(m.module_quant("model.layers.1.mlp.switch_mlp.down_proj"), (io::ModuleQuant{6, 64, "affine"}));
  EXPECT_EQ(m.module_quant("model.layers.1.mlp.gate"), (io::ModuleQuant{8, 64, "affine"}));
  // Read as packed, but said once: the first module the section's 8 bits misdescribe, with
  // both values, and how many more there are.
  ASSERT_FALSE(m.inferred_quant.empty());
  const auto& first = m.inferred_quant.front();
  EXPECT_EQ(first.config, (io::ModuleQuant{8, 64, "affine"}));
  EXPECT_EQ(first.packed.bits, first.tensor.find("down_proj") != std::string::npos ? 6 : 4)
      << first.tensor;
  for (const auto& d : m.inferred_quant) EXPECT_EQ(d.tensor.find("mlp.gate."), std::string::npos);
  const std::string w = inferred_quant_warning(m, tmp.path());
  for (const std::string& part :
       {tmp.path() + "/config.json", std::string("says bits 8, group_size 64 (affine)"),
        "tensor '" + first.tensor + "' is packed as bits " + std::to_string(first.packed.bits),
        str_cat("and ", m.inferred_quant.size() - 1, " more modules"), std::string("mlx-lm")})
    EXPECT_NE(w.find(part), std::string::npos) << w << "\nlacks: " << part;
  std::vector<TensorRecord> t = plan.tensors;
  for (TensorRecord& r : t)  // 7-bit packing: nothing supported, so the global 8 bits decide
    if (r.name == "model.layers.1.mlp.switch_mlp.up_proj.weight") r.shape.back() = 256 * 7 / 32;
  write_tensors(tmp.path(), t);
  expect_error([&] { open_model_checkpoint(tmp.path()); },
               {"model.layers.1.mlp.switch_mlp.up_proj.weight", "expected U32 [8, 128, 64]",
                "found U32 [8, 128, 56]", "bits 8"});
}

TEST(ModelCheckpoint, WrongDtypeAndUnknownTensors) {
  TempDir tmp;
  const CheckpointPlan plan = plan_preset_checkpoint(*find_preset("tiny-mixtral"), 0, {}, DType::BF16);
  std::vector<TensorRecord> t = plan.tensors;
  for (TensorRecord& r : t)
    if (r.name == "model.norm.weight") r.dtype = DType::I32;
  TensorRecord extra = t.back();
  extra.name = "model.rotary_emb.inv_freq";
  t.push_back(extra);
  write_tensors(tmp.path(), t);
  write_config(tmp.path(), plan.config_json);
  expect_error([&] { open_model_checkpoint(tmp.path()); }, {"model.norm.weight", "found I32 [256]"});
  for (TensorRecord& r : t)
    if (r.name == "model.norm.weight") r.dtype = DType::F32;
  write_tensors(tmp.path(), t);
  // A tensor nothing binds is an error by default (mlx-lm's strict load refuses it too).
  expect_error([&] { open_model_checkpoint(tmp.path()); },
               {"model.rotary_emb.inv_freq", "nothing would read it"});
  CheckOptions lenient;
  lenient.fail_on_unknown = false;
  const ModelCheckpoint m = open_model_checkpoint(tmp.path(), lenient);
  EXPECT_EQ(m.unknown_tensors, std::vector<std::string>{"model.rotary_emb.inv_freq"});
}

// A config with fewer layers than the checkpoint used to run on the first layers and ignore
// the rest; now the tensors of the layers it does not describe are named.
TEST(ModelCheckpoint, ConfigWithFewerLayersThanTheCheckpointIsRejected) {
  TempDir tmp;
  const CheckpointPlan plan = plan_preset_checkpoint(*find_preset("tiny-mixtral"), 0, SynthQuant{}, DType::BF16);
  write_tensors(tmp.path(), plan.tensors);
  nlohmann::json cfg = plan.config_json;
  cfg["num_hidden_layers"] = 1;
  write_config(tmp.path(), cfg);
  expect_error([&] { open_model_checkpoint(tmp.path()); },
               {"model.layers.1.", "not part of this mixtral model (1 layers in config.json)"});
}

// What mlx-lm's sanitize drops is dropped, and only that: a tied model's lm_head (Qwen3-MoE,
// Mixtral), Llama-4's vision tower; an untied model's extra tensor is still an error.
TEST(ModelCheckpoint, TensorsTheReferenceDropsAreAccepted) {
  struct Case {
    const char* preset;
    bool tie;
    std::string extra;
    bool accepted;
  };
  const Case cases[] = {
      {"tiny-qwen3-moe", true, "lm_head.weight", true},
      {"tiny-mixtral", true, "lm_head.weight", true},
      {"tiny-llama4", false, "vision_model.patch_embedding.weight", true},
      {"tiny-llama4", false, "multi_modal_projector.linear_1.weight", true},
      {"tiny-olmoe", true, "lm_head.weight", false},  // olmoe's sanitize keeps it: strict load fails
      {"tiny-qwen3-moe", true, "model.layers.0.self_attn.rotary_emb.inv_freq", false},
      // Qwen3-Next's multi-token-prediction weights, as the Hub's checkpoints carry them.
      {"tiny-qwen3-next", false, "mtp.fc.weight", true},
      {"tiny-qwen3-next", false, "mtp.layers.0.mlp.experts.0.up_proj.weight", true},
      {"tiny-qwen3-next", false, "model.mtp_extra.weight", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.preset) + " + " + c.extra);
    TempDir tmp;
    ModelPreset p = *find_preset(c.preset);
    p.tie_embeddings = c.tie;
    const CheckpointPlan plan = plan_preset_checkpoint(p, 0, SynthQuant{}, DType::BF16);
    std::vector<TensorRecord> t = plan.tensors;
    TensorRecord extra = t.front();
    extra.name = c.extra;
    extra.dtype = DType::BF16;
    extra.shape = {4, 4};
    t.push_back(extra);
    write_tensors(tmp.path(), t);
    write_config(tmp.path(), plan.config_json);
    if (c.accepted) {
      const ModelCheckpoint m = open_model_checkpoint(tmp.path());
      EXPECT_EQ(m.dropped_tensors, std::vector<std::string>{c.extra});
    } else {
      expect_error([&] { open_model_checkpoint(tmp.path()); }, {c.extra, "nothing would read it"});
    }
  }
}

// The Hugging Face names mlx-lm's sanitize renames are read under the new names: LFM2-MoE's
// dense feed_forward.w1/w3/w2 (transformers' Lfm2MoeMLP), Ling's bare router mlp.gate.weight.
// Both names at once is an error naming both.
TEST(ModelCheckpoint, HuggingFaceNamesTheReferenceRenames) {
  struct Case {
    const char* preset;
    std::vector<std::pair<std::string, std::string>> hub;  // {table name, Hub name}
  };
  const Case cases[] = {
      {"tiny-lfm2-moe",
       {{"model.layers.0.feed_forward.gate_proj.weight", "model.layers.0.feed_forward.w1.weight"},
        {"model.layers.0.feed_forward.up_proj.weight", "model.layers.0.feed_forward.w3.weight"},
        {"model.layers.0.feed_forward.down_proj.weight", "model.layers.0.feed_forward.w2.weight"}}},
      {"tiny-bailing-moe",
       {{"model.layers.1.mlp.gate.gate_proj.weight", "model.layers.1.mlp.gate.weight"},
        {"model.layers.2.mlp.gate.gate_proj.weight", "model.layers.2.mlp.gate.weight"}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.preset);
    TempDir tmp;
    SynthQuant q;
    q.bits = 0;  // Hugging Face checkpoints are float
    const CheckpointPlan plan = plan_preset_checkpoint(*find_preset(c.preset), 0, q, DType::BF16);
    std::vector<TensorRecord> t = plan.tensors;
    size_t found = 0;
    for (TensorRecord& r : t)
      for (const auto& [table, hub] : c.hub)
        if (r.name == table) r.name = hub, ++found;
    ASSERT_EQ(found, c.hub.size());
    write_tensors(tmp.path(), t);
    write_config(tmp.path(), plan.config_json);
    const ModelCheckpoint m = open_model_checkpoint(tmp.path());
    EXPECT_EQ(m.renamed_tensors.size(), c.hub.size());
    EXPECT_TRUE(m.unknown_tensors.empty());
    EXPECT_EQ(m.tensors.size(), plan.tensors.size());
    const std::string& table = c.hub.front().first;
    EXPECT_EQ(m.weights.require(table).name, table);
    // The table's name beside the Hub's: which one would be read is ambiguous.
    TensorRecord both = plan.tensors.front();
    for (const TensorRecord& r : plan.tensors)
      if (r.name == table) both = r;
    t.push_back(both);
    write_tensors(tmp.path(), t);
    expect_error([&] { open_model_checkpoint(tmp.path()); },
                 {c.hub.front().second, table, "both present"});
  }
}

TEST(ModelCheckpoint, PerExpertHuggingFaceLayoutNeedsStacking) {
  TempDir tmp;
  SynthQuant q;
  q.bits = 0;  // an unquantized Hugging Face checkpoint
  const CheckpointPlan plan = plan_preset_checkpoint(*find_preset("tiny-mixtral"), 0, q, DType::BF16);
  std::vector<TensorRecord> t;
  for (const TensorRecord& r : plan.tensors) {
    if (r.role != TensorRole::kExperts) {
      t.push_back(r);
      continue;
    }
    const ModuleSpec* m = find_module(plan.modules, r.module);
    for (int64_t e = 0; e < r.shape[0]; ++e) {
      TensorRecord x = r;
      x.shape.erase(x.shape.begin());
      std::string n = m->hf_pattern;
      n.replace(n.find("{e}"), 3, std::to_string(e));
      x.name = n + ".weight";
      t.push_back(x);
    }
  }
  write_tensors(tmp.path(), t);
  write_config(tmp.path(), plan.config_json);
  expect_error([&] { open_model_checkpoint(tmp.path()); },
               {"model.layers.0.block_sparse_moe.switch_mlp.gate_proj", "experts.{e}.w1", "stacked"});
  CheckOptions opt;
  opt.allow_per_expert_layout = true;
  const ModelCheckpoint m = open_model_checkpoint(tmp.path(), opt);
  EXPECT_EQ(m.per_expert_layouts.size(), 6u);  // 2 layers x gate/up/down
  EXPECT_TRUE(m.unknown_tensors.empty());
  EXPECT_FALSE(moe_layer_infos(m)[0].stacked);
  // A missing expert is named.
  t.erase(std::remove_if(t.begin(), t.end(),
                         [](const TensorRecord& r) { return r.name == "model.layers.1.block_sparse_moe.experts.5.w2.weight"; }),
          t.end());
  write_tensors(tmp.path(), t);
  expect_error([&] { open_model_checkpoint(tmp.path(), opt); }, {"model.layers.1.block_sparse_moe.experts.5.w2.weight"});
  // A broken expert is the one problem reported: the experts after it are still this
  // module's tensors, not tensors that nothing would read.
  try {
    open_model_checkpoint(tmp.path(), opt);
    ADD_FAILURE() << "a missing expert was accepted";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("(1 problem)"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("nothing would read"), std::string::npos) << msg;
  }
}

// gpt-oss's original layout (docs/families.md): mxfp4 gate_up_proj_blocks / _scales / _bias
// with gate and up rows alternating, down_proj_blocks / _scales / _bias. Each is checked by
// shape and dtype, recorded, and read as mxfp4 g32; a wrong shape is named with expected and
// found.
TEST(ModelCheckpoint, GptOssOriginalMxfp4Layout) {
  TempDir tmp;
  SynthQuant q;
  q.mode = quant::Mode::kMxfp4, q.bits = 4, q.group_size = 32, q.router_bits = 0;
  const CheckpointPlan plan = plan_preset_checkpoint(*find_preset("tiny-gpt-oss"), 0, q, DType::BF16);
  std::vector<TensorRecord> t;
  for (const TensorRecord& r : plan.tensors)
    if (r.role != TensorRole::kExperts) t.push_back(r);
  const ModelConfig& c = plan.config;
  const int64_t E = c.moe.num_experts, F = c.moe.expert_dff, H = c.hidden;
  auto add = [&](const std::string& name, DType d, std::vector<int64_t> shape) {
    TensorRecord x;
    x.name = name, x.dtype = d, x.shape = std::move(shape);
    t.push_back(x);
  };
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".mlp.experts.";
    add(p + "gate_up_proj_blocks", DType::U8, {E, 2 * F, H / 32, 16});
    add(p + "gate_up_proj_scales", DType::U8, {E, 2 * F, H / 32});
    add(p + "gate_up_proj_bias", DType::BF16, {E, 2 * F});
    add(p + "down_proj_blocks", DType::U8, {E, H, F / 32, 16});
    add(p + "down_proj_scales", DType::U8, {E, H, F / 32});
    add(p + "down_proj_bias", DType::BF16, {E, H});
  }
  write_tensors(tmp.path(), t);
  write_config(tmp.path(), plan.config_json);
  CheckOptions opt;
  opt.allow_per_expert_layout = true;
  const ModelCheckpoint m = open_model_checkpoint(tmp.path(), opt);
  EXPECT_TRUE(m.unknown_tensors.empty());
  EXPECT_EQ(m.per_expert_layouts.size(), size_t(3 * c.num_layers));
  EXPECT_EQ(m.module_quant("model.layers.0.mlp.experts.up_proj"), (io::ModuleQuant{4, 32, "mxfp4"}));
  EXPECT_FALSE(moe_layer_infos(m)[0].stacked);
  for (TensorRecord& r : t)
    if (r.name == "model.layers.2.mlp.experts.gate_up_proj_scales") r.shape = {E, F, H / 32};
  write_tensors(tmp.path(), t);
  expect_error([&] { open_model_checkpoint(tmp.path(), opt); },
               {"model.layers.2.mlp.experts.gate_up_proj_scales",
                "expected U8 [8, 256, 8]", "found U8 [8, 128, 8]"});
}

}  // namespace
}  // namespace moex::model
