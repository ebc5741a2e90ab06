// Fuzz target: config.json through parse_model_config and every family's parse (whatever its
// model_type says), the quantization section, and what consumes an accepted ModelConfig
// without weights (layer descriptions, module table, tensors under the quantization, bytes).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "fuzz_util.h"
#include "io/json_config.h"
#include "io/quant_config.h"
#include "model/family_registry.h"
#include "model/tensor_table.h"
#include "model/weight_bytes.h"

namespace {

const std::string kFile = "config.json";

void use_config(const moex::model::ModelConfig& cfg,
                const std::optional<moex::io::QuantConfig>& quant) {
  using moex::model::ModuleSpec;
  for (int64_t l = 0; l < cfg.num_layers; ++l) (void)moex::model::describe_layer(cfg, l);
  const std::vector<ModuleSpec> modules = moex::model::module_table(cfg);
  for (const ModuleSpec& m : modules) (void)m.parameter_count();
  // As inspect and make-model: the tensors each module becomes under the quantization
  // section, and the bytes read per token.
  const auto tensors = moex::model::expand_tensors(
      modules, moex::DType::BF16, [&](const ModuleSpec& m) -> std::optional<moex::io::ModuleQuant> {
        if (!quant || !m.quantizable()) return std::nullopt;
        std::optional<moex::io::ModuleQuant> q = quant->lookup(m.path);
        if (!q || !q->is_affine()) return std::nullopt;
        return q;
      });
  for (const moex::model::TensorRecord& t : tensors) (void)t.bytes();
  (void)moex::model::format_weight_bytes(moex::model::compute_weight_bytes(cfg, tensors));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json j;
  try {
    j = moex::io::parse_json_text(std::string_view(reinterpret_cast<const char*>(data), size),
                                  kFile);
  } catch (const moex::Error&) {
    return 0;
  }
  std::optional<moex::io::QuantConfig> quant;
  try {
    quant = moex::io::QuantConfig::from_config(j, kFile);
    if (!quant && j.is_object() && j.contains("text_config") && j["text_config"].is_object())
      quant = moex::io::QuantConfig::from_config(j["text_config"], kFile + ": text_config");
  } catch (const moex::Error&) {
  }
  try {
    use_config(moex::model::parse_model_config(j, kFile), quant);
  } catch (const moex::Error&) {
  }
  for (const moex::model::Family* f : moex::model::all_families()) {
    try {
      use_config(f->parse(j, kFile), quant);
    } catch (const moex::Error&) {
    }
  }
  return 0;
}
