// MLX's quantization section of config.json: global group_size/bits/mode plus per-module
// overrides ({group_size, bits[, mode]} or false). Everything is validated when built, so
// hostile values become a moex::Error naming the module path and field, never an abort.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace moex::io {

inline constexpr const char* kAffineMode = "affine";

struct ModuleQuant {
  int bits = 0;
  int group_size = 0;
  std::string mode;  // "affine", or another MLX mode ("mxfp4", ...) that callers may decline

  bool is_affine() const { return mode == kAffineMode; }
  bool operator==(const ModuleQuant&) const = default;
};

class QuantConfig {
 public:
  // From a config.json object: its "quantization" section, else "quantization_config"; nullopt
  // when neither is present (or both are null), i.e. the model is not quantized. A
  // "quantization_config" with "quant_method" (the Hugging Face form) is accepted only for
  // mxfp4/mxfp8, mapped as mlx-lm does; other methods are an Error. `file` names the source.
  static std::optional<QuantConfig> from_config(const nlohmann::json& config, const std::string& file);

  // From the section object itself; `section` names it in messages ("quantization").
  static QuantConfig from_section(const nlohmann::json& section, const std::string& file,
                                  const std::string& section_name);

  // The override for this module path if there is one (nullopt if it says `false`), else the
  // global setting. Modes other than affine are returned as they are: check is_affine().
  std::optional<ModuleQuant> lookup(std::string_view module_path) const;

  const ModuleQuant& global() const { return global_; }
  // Per-module overrides; nullopt values are modules marked `false` (not quantized).
  const std::map<std::string, std::optional<ModuleQuant>, std::less<>>& overrides() const {
    return overrides_;
  }

 private:
  ModuleQuant global_;
  std::map<std::string, std::optional<ModuleQuant>, std::less<>> overrides_;
};

}  // namespace moex::io
