// What `moex convert` does to each module, decided as `mlx_lm convert` (mlx-lm 0.32.2) decides
// it: the dtype rule, the quantization defaults per mode, the family's quant_predicate and
// cast_predicate (Family::reference_quant_override / reference_keeps_dtype), the mixed_*
// recipes, and the "quantization" block of config.json that follows from those decisions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/family_registry.h"
#include "model/model_config.h"
#include "model/tensor_table.h"
#include "quant/format.h"

namespace moex::model::convert {

// The command line's recipe (mlx_lm convert's flags and defaults).
struct Recipe {
  bool quantize = false;                    // -q
  int bits = 0;                             // --q-bits; 0: the mode's default (affine 4)
  int group_size = 0;                       // --q-group-size; 0: the mode's default (affine 64)
  quant::Mode mode = quant::Mode::kAffine;  // --q-mode
  std::string predicate;                    // --quant-predicate: "" or mixed_2_6 / 3_4 / 3_6 / 4_6
  std::optional<DType> dtype;               // --dtype; nullopt: config.json's torch_dtype rule
};

// Fills the mode's defaults and checks the combination; moex::Error naming the flag.
Recipe resolve_recipe(Recipe r);

// How one module is written.
struct ModuleDecision {
  bool quantized = false;
  int bits = 0, group_size = 0;
  quant::Mode mode = quant::Mode::kAffine;
  // The per-module entry config.json's quantization block gets (null: none).
  nlohmann::json config_entry;
};

// The decisions for a whole model.
class RecipePlan {
 public:
  // fine_grained: the checkpoint is partly quantized already (gpt-oss's mxfp4 experts); as in
  // mlx-lm, every module the recipe quantizes is then listed in the block with its settings.
  RecipePlan(const ModelConfig& cfg, const Family& family, const std::vector<ModuleSpec>& modules,
             const Recipe& recipe, bool fine_grained = false);
  const ModuleDecision& decision(size_t module_index) const { return decisions_[module_index]; }
  // The "quantization" section for the same modules (null json when not quantizing).
  nlohmann::json quantization_block(const std::vector<ModuleSpec>& modules) const;
  const Recipe& recipe() const { return r_; }

 private:
  ModuleDecision decide(const ModuleSpec& m) const;
  ModuleDecision mixed(const ModuleSpec& m) const;

  const ModelConfig& cfg_;
  const Family& family_;
  Recipe r_;
  bool fine_grained_ = false;
  size_t layer_location_ = 0;  // mixed recipes: which dot-separated part is the layer index
  std::vector<ModuleDecision> decisions_;
};

// mlx_lm convert's dtype rule: --dtype, else config.json's "torch_dtype", else text_config's
// "dtype", when it names float16 / bfloat16 / float32; nullopt: tensors keep their dtype.
std::optional<DType> conversion_dtype(const Recipe& r, const nlohmann::json& config);

// "affine" / "mxfp4" / "mxfp8" / "nvfp4" -> Mode; Error naming --q-mode otherwise.
quant::Mode parse_q_mode(const std::string& s);

}  // namespace moex::model::convert
