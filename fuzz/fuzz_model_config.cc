// Fuzz target: config.json through parse_model_config and every family's parse (whatever its
// model_type says), the quantization section, and what consumes an accepted ModelConfig
// without weights (module table, layer descriptions, per-module quantization lookup).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"
#include "fuzz_util.h"
#include "io/json_config.h"
#include "io/quant_config.h"
#include "model/family_registry.h"
#include "model/tensor_table.h"

namespace {

const std::string kFile = "config.json";

void use_config(const moex::model::ModelConfig& cfg,
                const std::optional<moex::io::QuantConfig>& quant) {
  for (int64_t l = 0; l < cfg.num_layers; ++l) (void)moex::model::describe_layer(cfg, l);
  for (const moex::model::ModuleSpec& m : moex::model::module_table(cfg)) {
    (void)m.parameter_count();
    if (quant) (void)quant->lookup(m.path);
  }
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
