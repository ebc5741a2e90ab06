// Opening a model directory: config.json parsed by its family, the safetensors checkpoint,
// and a check that every tensor of the family's table exists with the dtype, shape and
// quantization the config implies (mlx-lm's rules: a module with P.scales, or named in the
// quantization section, is affine-quantized with the section's bits / group size). The engine
// builds its weight views from the result.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/checkpoint.h"
#include "io/quant_config.h"
#include "model/model_config.h"
#include "model/tensor_table.h"

namespace moex::model {

struct CheckOptions {
  // Accept routed experts stored per expert (HF experts.{e}.* / w1,w3,w2) or as Llama-4's fused
  // HF tensors: they are recorded in per_expert_layouts instead of failing. The engine needs
  // stacked tensors (what mlx-lm's sanitize / mlx_lm.convert produce), so it leaves this off;
  // `moex inspect` turns it on to describe such a checkpoint.
  bool allow_per_expert_layout = false;
  // Fail on checkpoint tensors that the table does not know, except those the family says
  // mlx-lm drops (Family::reference_drops), as mlx-lm's strict load does. Off only to list
  // them (tests).
  bool fail_on_unknown = true;
  // A GGUF file: also bind its multi-token-prediction module (blk.N.nextn.* and layer N) under
  // the Hugging Face names a directory has (--spec mtp; model/engine/mtp_module.h).
  bool mtp_module = false;
};

struct ModelCheckpoint {
  ModelConfig config;
  std::optional<io::QuantConfig> quant;  // nullopt: no quantization section
  io::Checkpoint weights;
  std::vector<ModuleSpec> modules;
  // The tensors found, in table order, with the file's dtype/shape and the module's role and
  // quantization (per-expert layouts contribute one record per expert tensor).
  std::vector<TensorRecord> tensors;
  std::vector<std::string> unknown_tensors;     // in the files, not in the table
  std::vector<std::string> dropped_tensors;     // in the files, dropped as mlx-lm drops them
  std::vector<std::string> per_expert_layouts;  // stacked module paths stored unstacked
  // Tensors read under the name mlx-lm's sanitize gives them (Family::reference_rename):
  // {stored name, name read}.
  std::vector<std::pair<std::string, std::string>> renamed_tensors;

  // How a module is stored: its affine quantization, or nullopt for float.
  std::optional<io::ModuleQuant> module_quant(const std::string& module_path) const;
  // The tensor of a module part (e.g. ("model.layers.0.mlp.switch_mlp.up_proj", "scales")).
  const io::TensorInfo& tensor(const std::string& module_path, const char* part) const;

  std::map<std::string, io::ModuleQuant, std::less<>> module_quant_;  // filled by open

  // Modules the quantization section does not name whose packed shapes imply another format
  // than its global setting: they are read as packed (mlx-lm's infer_quant_config does the
  // same), which the user should hear about once (inferred_quant_warning).
  struct InferredQuant {
    std::string tensor;  // the module's packed weight, e.g. "model.layers.1.mlp.down_proj.weight"
    io::ModuleQuant config, packed;
  };
  std::vector<InferredQuant> inferred_quant;
};

// One line for stderr when some modules are read with another format than config.json's
// quantization section gives globally: the first such tensor, the config's value and the
// packed one, and how many more there are. Empty when there are none. `dir` names the model.
std::string inferred_quant_warning(const ModelCheckpoint& m, const std::string& dir);

// Parses <dir>/config.json, opens the checkpoint and checks it against the tensor table. A
// path ending in ".gguf" is opened as a GGUF model instead (model/gguf/gguf_model.h).
// Throws moex::Error naming the directory and listing every problem (up to 20), each naming
// the tensor and the expected vs found dtype / shape / quantization.
ModelCheckpoint open_model_checkpoint(const std::string& dir, const CheckOptions& opt = {});

// The check alone, for a config and a checkpoint already open (used by open_model_checkpoint).
ModelCheckpoint check_model_checkpoint(ModelConfig cfg, std::optional<io::QuantConfig> quant,
                                       io::Checkpoint ckpt, const CheckOptions& opt = {});

}  // namespace moex::model
