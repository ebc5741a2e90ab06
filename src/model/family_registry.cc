// The family registry: the explicit list in arch/families.def (with each family's tiny test
// preset), lookup by model_type, and the config.json entry points (parse / load / preset config).
#include "model/family_registry.h"

#include <filesystem>
#include <system_error>

#include "core/error.h"
#include "io/json_config.h"
#include "model/gguf/gguf_model.h"
#include "model/presets.h"

namespace moex::model {

#define MOEX_FAMILY(ident, tiny_preset) const Family& family_##ident();
#include "model/arch/families.def"
#undef MOEX_FAMILY

const std::vector<const Family*>& all_families() {
  static const std::vector<const Family*> list = {
#define MOEX_FAMILY(ident, tiny_preset) &family_##ident(),
#include "model/arch/families.def"
#undef MOEX_FAMILY
  };
  return list;
}

const std::vector<const char*>& tiny_family_presets() {
  static const std::vector<const char*> list = {
#define MOEX_FAMILY(ident, tiny_preset) tiny_preset,
#include "model/arch/families.def"
#undef MOEX_FAMILY
  };
  return list;
}

const Family* find_family(std::string_view model_type) {
  for (const Family* f : all_families())
    for (const std::string& t : f->model_types())
      if (t == model_type) return f;
  return nullptr;
}

const Family& family_for(std::string_view model_type, const std::string& file) {
  if (const Family* f = find_family(model_type)) return *f;
  std::string supported;
  for (const Family* f : all_families())
    for (const std::string& t : f->model_types()) supported += (supported.empty() ? "" : ", ") + t;
  fail(file, ": model_type '", model_type, "' is not supported (supported: ", supported, ")");
}

ModelConfig parse_model_config(const nlohmann::json& config, const std::string& file) {
  if (!config.is_object()) fail(file, ": expected a JSON object at the top level");
  const std::string type = io::get_string(config, "model_type", file);
  return family_for(type, file).parse(config, file);
}

ModelConfig load_model_config(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec) && !ec && find_preset(dir) != nullptr)
    fail("model directory ", dir, " does not exist; '", dir,
         "' is a preset name: write it first with `moex make-model --preset ", dir,
         " --out DIR` and pass -m DIR (`moex sweep -m` builds presets itself)");
  if (is_gguf_path(dir)) return load_gguf_model_config(dir);
  const std::string file = dir + "/config.json";
  return parse_model_config(io::read_json_file(file), file);
}

nlohmann::json preset_config_json(const ModelPreset& p, int64_t num_layers) {
  ModelPreset q = p;
  if (num_layers > 0) q.layers = num_layers;
  return family_for(q.model_type, "preset " + q.name).preset_config(q);
}

}  // namespace moex::model
