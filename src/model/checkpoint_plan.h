// The plan of a synthetic checkpoint: the config.json (family fields plus the MLX
// "quantization" / "quantization_config" sections, with per-module overrides for routers and
// expert down projections, as mlx-community checkpoints carry) and the list of tensors with
// dtype, shape and quantization, in write order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "io/quant_config.h"
#include "quant/format.h"
#include "model/model_config.h"
#include "model/presets.h"
#include "model/tensor_table.h"

namespace moex::model {

// How make-model quantizes. Quantizable modules (Linear, Embedding) whose input width is a
// multiple of group_size get `bits` (mlx-lm's convert rule); routers get router_bits and
// routed-expert down projections down_bits when those are nonzero and differ.
struct SynthQuant {
  int bits = 4;           // 0: write an unquantized (float) checkpoint
  int group_size = 64;
  int router_bits = 8;    // 0: same as bits
  int down_bits = 0;      // 0: same as bits
  // An fp mode (mxfp4, mxfp8, nvfp4) quantizes every quantizable module, routers included,
  // with the mode's own bits and group size (bits/group_size must be those; router_bits and
  // down_bits 0).
  quant::Mode mode = quant::Mode::kAffine;
};

// Throws moex::Error naming the flag (--bits, --group-size, --router-bits, --down-bits).
void check_synth_quant(const SynthQuant& q);

// The decision for one module (nullopt: kept in float).
std::optional<io::ModuleQuant> synth_module_quant(const ModuleSpec& m, const SynthQuant& q);

// The "quantization" section for these modules: {"group_size", "bits", "mode": "affine",
// "<module path>": {"group_size", "bits"} for every module whose setting differs from the
// global one}. Null json when q.bits == 0.
nlohmann::json quantization_section(const std::vector<ModuleSpec>& modules, const SynthQuant& q);

struct CheckpointPlan {
  ModelConfig config;
  nlohmann::json config_json;  // what config.json will hold
  std::vector<ModuleSpec> modules;
  std::vector<TensorRecord> tensors;
  DType dtype = DType::BF16;
  int64_t total_bytes() const;
};

// Plans the checkpoint of a preset (num_layers > 0 overrides its layer count).
CheckpointPlan plan_preset_checkpoint(const ModelPreset& p, int64_t num_layers,
                                      const SynthQuant& q, DType dtype);

// Plans the checkpoint described by a family config.json object (without quantization
// sections; they are added from q).
CheckpointPlan plan_checkpoint(nlohmann::json config_json, const SynthQuant& q, DType dtype);

// "bf16" | "f16" | "f32" -> DType; Error naming --dtype otherwise.
DType parse_model_dtype(const std::string& s);

}  // namespace moex::model
