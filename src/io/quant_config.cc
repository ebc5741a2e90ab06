// Parsing and validation of MLX quantization sections (see quant_config.h).
#include "io/quant_config.h"

#include "core/error.h"
#include "io/json_config.h"
#include "quant/format.h"

namespace moex::io {

using nlohmann::json;

namespace {

// MLX's modes and, for the non-affine ones, the single (group_size, bits) each allows
// (mlx.nn.layers.quantized._defaults_for_mode; mx.quantize rejects other pairs).
struct ModeRule {
  const char* name;
  int group_size;  // 0: any valid affine group size
  int bits;        // 0: any valid affine width
};
// Then moex's ggml block modes (GGUF weights, quant/format.h; -1: the format checks the pair).
constexpr ModeRule kModes[] = {{"affine", 0, 0},       {"mxfp4", 32, 4},      {"mxfp8", 32, 8},
                               {"nvfp4", 16, 4},       {"ggml_q0", -1, -1},   {"ggml_k_min", -1, -1},
                               {"ggml_k_zero", -1, -1}};

const ModeRule& mode_rule(const json& v, const std::string& what) {
  if (!v.is_string()) fail(what, " field 'mode' is ", json_kind(v), "; expected a string");
  const std::string& s = v.get_ref<const std::string&>();
  for (const ModeRule& m : kModes)
    if (s == m.name) return m;
  fail(what, " field 'mode' = '", s.substr(0, 64), "' is not an MLX quantization mode; expected one of ",
       "affine, mxfp4, mxfp8, nvfp4 (or moex's GGUF layouts ggml_q0, ggml_k_min, ggml_k_zero)");
}

int checked_field(const json& obj, const char* field, const ModeRule& mode, const std::string& what) {
  auto it = obj.find(field);
  if (it == obj.end()) fail(what, " field '", field, "' is missing; expected an integer");
  const bool is_bits = std::string_view(field) == "bits";
  const int fixed = is_bits ? mode.bits : mode.group_size;
  // null: the mode's default, as MLX's to_quantized(group_size=None, bits=None) takes it
  // (affine: group 64, 4 bits). mlx-lm 0.32.2's mixed_* recipes write null group sizes.
  if (it->is_null()) return fixed != 0 ? fixed : (is_bits ? 4 : 64);
  const int64_t v = json_to_int(*it, str_cat(what, " field '", field, "'"));
  if (fixed < 0) {  // a ggml mode: parse_params checks the pair against the format
    if (v < 0 || v > 1024) fail(what, " field '", field, "' = ", v, " is out of range");
  } else if (fixed != 0) {
    if (v != fixed)
      fail(what, " field '", field, "' = ", v, " is invalid for mode '", mode.name, "'; expected ", fixed);
  } else if (is_bits ? !quant::is_valid_bits(v > 64 || v < 0 ? -1 : int(v))
                     : !quant::is_valid_group_size(v > 1024 || v < 0 ? -1 : int(v))) {
    fail(what, " field '", field, "' = ", v, " is not supported; expected one of ",
         is_bits ? "2, 3, 4, 5, 6, 8" : "32, 64, 128");
  }
  return int(v);
}

// {group_size, bits[, mode][, quantize_input]} -> ModuleQuant; `what` prefixes messages.
ModuleQuant parse_params(const json& obj, const std::string& what, bool allow_module_keys) {
  auto mode_it = obj.find("mode");
  const ModeRule& mode = (mode_it == obj.end() || mode_it->is_null()) ? kModes[0] : mode_rule(*mode_it, what);
  ModuleQuant q;
  q.mode = mode.name;
  q.bits = checked_field(obj, "bits", mode, what);
  q.group_size = checked_field(obj, "group_size", mode, what);
  if (mode.bits < 0) {
    const std::optional<quant::Mode> m = quant::mode_from_name(mode.name, true);
    if (const char* why = quant::format_unsupported_reason(quant::Format::ggml(*m, q.bits, q.group_size)))
      fail(what, ": bits ", q.bits, " / group_size ", q.group_size, ": ", why);
  }
  if (!allow_module_keys) {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      const std::string& k = it.key();
      if (k == "bits" || k == "group_size" || k == "mode") continue;
      if (k == "quantize_input") {  // activation quantization (nvfp4/mxfp8 only): a flag
        if (!it->is_boolean()) fail(what, " field 'quantize_input' is ", json_kind(*it), "; expected a boolean");
        continue;
      }
      fail(what, " has unexpected field '", k.substr(0, 128), "'; expected group_size, bits and optionally mode");
    }
  }
  return q;
}

}  // namespace

QuantConfig QuantConfig::from_section(const json& section, const std::string& file,
                                      const std::string& section_name) {
  const std::string what = str_cat(file, ": ", section_name);
  if (!section.is_object()) fail(what, " is ", json_kind(section), "; expected an object");
  QuantConfig qc;
  qc.global_ = parse_params(section, what, /*allow_module_keys=*/true);
  for (auto it = section.begin(); it != section.end(); ++it) {
    const std::string& key = it.key();
    if (key == "bits" || key == "group_size" || key == "mode") continue;
    const std::string mwhat = str_cat(what, "['", key.substr(0, 256), "']");
    if (key.empty()) fail(mwhat, ": empty module path; expected a module path such as 'model.embed_tokens'");
    if (it->is_boolean()) {  // false: not quantized; true: the global setting (as mlx.nn.quantize)
      qc.overrides_.emplace(key, it->get<bool>() ? std::optional<ModuleQuant>(qc.global_) : std::nullopt);
    } else if (it->is_object()) {
      qc.overrides_.emplace(key, parse_params(*it, mwhat, /*allow_module_keys=*/false));
    } else {
      fail(mwhat, " is ", json_kind(*it),
           "; expected a module override (an object {group_size, bits[, mode]} or false)");
    }
  }
  return qc;
}

std::optional<QuantConfig> QuantConfig::from_config(const json& config, const std::string& file) {
  if (!config.is_object()) fail(file, ": top level is ", json_kind(config), "; expected an object");
  if (has_field(config, "quantization")) return from_section(config["quantization"], file, "quantization");
  if (!has_field(config, "quantization_config")) return std::nullopt;
  const json& qc = config["quantization_config"];
  if (qc.is_object() && qc.contains("quant_method")) {  // Hugging Face form
    const std::string method = get_string(qc, "quant_method", file + ": quantization_config");
    if (method == "mxfp4" || method == "mxfp8") {
      const json mapped = {{"group_size", 32}, {"bits", method == "mxfp4" ? 4 : 8}, {"mode", method}};
      return from_section(mapped, file, "quantization_config (quant_method " + method + ")");
    }
    fail(file, ": quantization_config.quant_method '", method.substr(0, 64),
         "' is not supported; expected an MLX 'quantization' section (or quant_method mxfp4/mxfp8)");
  }
  return from_section(qc, file, "quantization_config");
}

std::optional<ModuleQuant> QuantConfig::lookup(std::string_view module_path) const {
  auto it = overrides_.find(module_path);
  if (it != overrides_.end()) return it->second;
  return global_;
}

}  // namespace moex::io
