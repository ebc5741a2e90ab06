// The MTP module's config and table (see mtp_plan.h).
#include "model/mtp_plan.h"

#include "core/error.h"
#include "io/json_config.h"
#include "model/family_registry.h"
#include "model/gguf/gguf_model.h"

namespace moex::model {

ModelConfig mtp_module_config(const std::string& path, const ModelConfig& main,
                              const std::function<bool(const std::string&)>& has) {
  if (is_gguf_path(path)) {
    if (main.family != "glm4_moe")
      fail("multi-token prediction: GGUF file ", path, " is a ", main.family, " model; GGUF "
           "files carry the module for glm4moe only (llama.cpp drops DeepSeek's)");
    return mtp_module_config(gguf_config_json(*gguf::GgufFile::open(path)),
                             path + " (GGUF metadata)", main, has, true);
  }
  const std::string file = path + "/config.json";
  return mtp_module_config(io::read_json_file(file), file, main, has);
}

ModelConfig mtp_module_config(const nlohmann::json& config, const std::string& file,
                              const ModelConfig& main,
                              const std::function<bool(const std::string&)>& has, bool gguf) {
  if (main.family != "glm4_moe" && main.family != "deepseek_v3")
    fail("multi-token prediction: ", file, " is a ", main.family, " model; multi-token-"
         "prediction drafting runs on glm4_moe (GLM-4.5) and deepseek_v3 (DeepSeek-V3, R1) "
         "checkpoints");
  nlohmann::json j = config;
  const int64_t nextn = io::has_field(j, "num_nextn_predict_layers") &&
                                !j["num_nextn_predict_layers"].is_null()
                            ? io::get_int(j, "num_nextn_predict_layers", file)
                            : 0;
  if (nextn < 1)
    fail("multi-token prediction: ", file, " announces no multi-token-prediction module "
         "(num_nextn_predict_layers is ", nextn, ")");
  const int64_t n = main.num_layers;
  const std::string prefix = "model.layers." + std::to_string(n);
  // The module's tensors besides its decoder layer; mlx_lm convert drops all of them.
  for (const char* part : {".enorm.weight", ".hnorm.weight", ".eh_proj.weight",
                           ".shared_head.norm.weight", ".input_layernorm.weight"})
    if (!has(prefix + part)) {
      if (gguf)
        fail("multi-token prediction: ", file, ": the file has no tensor for ", prefix, part,
             " (blk.", n, ".nextn.* and block ", n, " hold the module where llama.cpp's "
             "converter kept it)");
      fail("multi-token prediction: ", file, ": the checkpoint has no tensor ", prefix, part,
           ", so it lacks its multi-token-prediction module (mlx_lm convert drops it, and moex "
           "convert unless given --keep-mtp; use the Hugging Face checkpoint or convert it "
           "with --keep-mtp)");
    }
  // The family's own plan of one more layer is the module's decoder layer.
  j["num_hidden_layers"] = n + 1;
  ModelConfig full = parse_model_config(j, file);
  ModelConfig c = main;
  c.num_layers = 1;
  c.layers.assign(1, full.layers[size_t(n)]);
  if (has(prefix + ".embed_tokens.weight")) c.embed_name = prefix + ".embed_tokens";
  c.final_norm_name = prefix + ".shared_head.norm";
  if (has(prefix + ".shared_head.head.weight")) {
    c.lm_head_name = prefix + ".shared_head.head";
    c.tie_word_embeddings = false;
    c.lm_head_bias = false;
  }
  return c;
}

std::vector<ModuleSpec> mtp_module_table(const ModelConfig& mtp_cfg, int64_t main_layers,
                                         const std::vector<ModuleSpec>& skip) {
  std::vector<ModuleSpec> out;
  for (ModuleSpec& m : module_table(mtp_cfg)) {
    bool skipped = false;
    for (const ModuleSpec& s : skip) skipped = skipped || s.path == m.path;
    if (!skipped) out.push_back(std::move(m));
  }
  const std::string prefix = "model.layers." + std::to_string(main_layers);
  const int64_t H = mtp_cfg.hidden;
  for (const char* norm : {".enorm", ".hnorm"}) {
    ModuleSpec n;
    n.path = prefix + norm;
    n.kind = ModuleKind::kNorm;
    n.role = TensorRole::kNorm;
    n.layer = 0;
    n.shape = {H};
    n.slot = Slot::kInputNorm;
    out.push_back(std::move(n));
  }
  ModuleSpec eh;
  eh.path = prefix + ".eh_proj";
  eh.kind = ModuleKind::kLinear;
  eh.role = TensorRole::kAttention;
  eh.layer = 0;
  eh.shape = {H, 2 * H};
  eh.slot = Slot::kQ;
  out.push_back(std::move(eh));
  return out;
}

}  // namespace moex::model
