// The model-family registry: each family (src/model/arch/<family>.cc) parses its config.json
// into a ModelConfig and writes the config.json of a synthetic preset. Adding a family is one
// new file plus one MOEX_FAMILY line in arch/families.def (an explicit list, so that a static
// moex_model archive cannot drop a family's object file the way it drops unreferenced
// self-registering statics; the line also names the family's tiny test preset).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model_config.h"
#include "model/presets.h"

namespace moex::model {

class Family {
 public:
  virtual ~Family() = default;
  // Registry name, e.g. "qwen3_moe"; also the ModelConfig::family of what parse returns.
  virtual const char* name() const = 0;
  // config.json model_type values this family reads (e.g. {"llama4"}).
  virtual std::vector<std::string> model_types() const = 0;
  // Parses a config.json object with the family's Hugging Face field names. `file` names the
  // source in errors (wrong type, missing field, inconsistent values). The result has passed
  // validate_model_config.
  virtual ModelConfig parse(const nlohmann::json& config, const std::string& file) const = 0;
  // The config.json (real field names, no quantization section) describing a synthetic model
  // of this preset's shape; parse(preset_config(p)) reproduces the preset's dimensions.
  virtual nlohmann::json preset_config(const ModelPreset& p) const = 0;
  // True for a checkpoint tensor that mlx-lm's sanitize() for this family drops before its
  // strict load (e.g. a tied model's lm_head, Llama-4's vision tower). Every other tensor that
  // the family's table does not bind is an error.
  virtual bool reference_drops(const ModelConfig& cfg, std::string_view tensor) const {
    (void)cfg;
    (void)tensor;
    return false;
  }
  // The name mlx-lm's sanitize gives a tensor that this family's Hugging Face checkpoints store
  // under another name (LFM2's dense feed_forward.w1.weight is feed_forward.gate_proj.weight),
  // or "" for a tensor it does not rename. The checker renames before it binds anything, so
  // the tensor table knows one name per tensor.
  virtual std::string reference_rename(const ModelConfig& cfg, std::string_view tensor) const {
    (void)cfg;
    (void)tensor;
    return {};
  }
  // mlx-lm's quant_predicate for this family, as `mlx_lm convert -q` applies it: the
  // {bits, group_size} it gives module `path` in place of the command's (routers at 8 bits,
  // group 64), written into config.json without a mode and quantized affine; nullopt for a
  // module it leaves to the command (the recipes of --quant-predicate replace this).
  struct QuantOverride {
    int bits = 8, group_size = 64;
  };
  virtual std::optional<QuantOverride> reference_quant_override(const ModelConfig& cfg,
                                                                std::string_view path) const {
    (void)cfg;
    (void)path;
    return std::nullopt;
  }
  // mlx-lm's cast_predicate: true for a tensor (mlx-lm name) that `mlx_lm convert` keeps in its
  // stored dtype whatever --dtype says (e_score_correction_bias, A_log).
  virtual bool reference_keeps_dtype(const ModelConfig& cfg, std::string_view tensor) const {
    (void)cfg;
    (void)tensor;
    return false;
  }
  // The decoder layer of a multi-token-prediction module stored apart from the main layers
  // (Qwen3-Next's and Qwen3.5's mtp.layers.0; model/mtp_plan.h), from the config.json object
  // `config` and the main model's config `main`; nullopt for a family without such a module.
  virtual std::optional<LayerPlan> mtp_layer(const ModelConfig& main, const nlohmann::json& config,
                                             const std::string& file) const {
    (void)main;
    (void)config;
    (void)file;
    return std::nullopt;
  }
};

const std::vector<const Family*>& all_families();
// The tiny preset that stands for each family in the tests run over every family, parallel to
// all_families() (arch/families.def names it beside the family): "tiny-qwen3-moe", ...
const std::vector<const char*>& tiny_family_presets();
// nullptr if no family reads this model_type.
const Family* find_family(std::string_view model_type);
// As find_family, but throws moex::Error naming `file` and listing the supported model_types.
const Family& family_for(std::string_view model_type, const std::string& file);

// Reads model_type from the config object and dispatches to its family's parse.
ModelConfig parse_model_config(const nlohmann::json& config, const std::string& file);
// Reads <dir>/config.json and parses it (a path ending in ".gguf": the GGUF file's metadata).
ModelConfig load_model_config(const std::string& dir);

// The config.json of a preset (through its family), with `num_layers` overriding the layer
// count when > 0.
nlohmann::json preset_config_json(const ModelPreset& p, int64_t num_layers = 0);

}  // namespace moex::model

// In an arch/<family>.cc: MOEX_DEFINE_FAMILY(qwen3_moe, Qwen3MoeFamily) defines the accessor
// family_qwen3_moe() that arch/families.def lists with MOEX_FAMILY(qwen3_moe, "tiny-qwen3-moe").
#define MOEX_DEFINE_FAMILY(ident, Class)                  \
  namespace moex::model {                                 \
  const Family& family_##ident() {                        \
    static const Class instance;                          \
    return instance;                                      \
  }                                                       \
  }
