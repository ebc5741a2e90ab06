// The MTP module's plan and table (see mtp_plan.h).
#include "model/mtp_plan.h"

#include "core/error.h"
#include "io/json_config.h"
#include "model/family_registry.h"
#include "model/gguf/gguf_model.h"

namespace moex::model {
namespace {

// The message for a module part `tensor` the checkpoint lacks.
[[noreturn]] void missing_part(const std::string& file, const std::string& tensor, bool gguf,
                               int64_t n) {
  if (gguf)
    fail("multi-token prediction: ", file, ": the file has no tensor for ", tensor, " (blk.", n,
         ".nextn.* and block ", n, " hold the module where llama.cpp's converter kept it)");
  fail("multi-token prediction: ", file, ": the checkpoint has no tensor ", tensor, ", so it "
       "lacks its multi-token-prediction module (mlx_lm convert drops it, and moex convert "
       "unless given --keep-mtp; use the Hugging Face checkpoint or convert it with --keep-mtp)");
}

// A count field of the config (`j` and, for Qwen3.5, its text_config): -1 when absent or null.
int64_t optional_count(const nlohmann::json& j, const char* field, const std::string& file) {
  if (!io::has_field(j, field) || j[field].is_null()) return -1;
  return io::get_int(j, field, file);
}

// DeepSeek-V3 / GLM-4.5: the module is layer N of the family's own plan of N + 1 layers.
MtpPlan nextn_layer_plan(const nlohmann::json& config, const std::string& file,
                         const ModelConfig& main,
                         const std::function<bool(const std::string&)>& has, bool gguf) {
  nlohmann::json j = config;
  const int64_t nextn = optional_count(j, "num_nextn_predict_layers", file);
  if (nextn < 1)
    fail("multi-token prediction: ", file, " announces no multi-token-prediction module "
         "(num_nextn_predict_layers is ", nextn < 0 ? 0 : nextn, ")");
  const int64_t n = main.num_layers;
  const std::string prefix = "model.layers." + std::to_string(n);
  for (const char* part : {".enorm.weight", ".hnorm.weight", ".eh_proj.weight",
                           ".shared_head.norm.weight", ".input_layernorm.weight"})
    if (!has(prefix + part)) missing_part(file, prefix + part, gguf, n);
  j["num_hidden_layers"] = n + 1;
  const ModelConfig full = parse_model_config(j, file);
  MtpPlan p;
  ModelConfig& c = p.cfg;
  c = main;
  c.num_layers = 1;
  c.layers.assign(1, full.layers[size_t(n)]);
  if (has(prefix + ".embed_tokens.weight")) c.embed_name = prefix + ".embed_tokens";
  c.final_norm_name = prefix + ".shared_head.norm";
  if (has(prefix + ".shared_head.head.weight")) {
    c.lm_head_name = prefix + ".shared_head.head";
    c.tie_word_embeddings = false;
    c.lm_head_bias = false;
  }
  p.enorm = prefix + ".enorm";
  p.hnorm = prefix + ".hnorm";
  p.eh_proj = prefix + ".eh_proj";
  p.zero_first_embedding = true;
  return p;
}

// Qwen3-Next / Qwen3.5: mtp.* beside the main model, its decoder layer from the family
// (`layer`, Family::mtp_layer), the main embedding and head (vLLM's qwen3_next_mtp.py /
// qwen3_5_mtp.py).
MtpPlan mtp_prefix_plan(const nlohmann::json& config, const std::string& file,
                        const ModelConfig& main,
                        const std::function<bool(const std::string&)>& has,
                        const LayerPlan& layer) {
  const nlohmann::json* text = io::get_object_or_null(config, "text_config", file);
  const nlohmann::json& j = text ? *text : config;
  const std::string f = text ? file + ": text_config" : file;
  // Qwen3.5's configs count the module's layers; Qwen3-Next's leave it to the tensors.
  for (const char* field : {"mtp_num_hidden_layers", "num_nextn_predict_layers"})
    if (optional_count(j, field, f) == 0)
      fail("multi-token prediction: ", f, " announces no multi-token-prediction module (", field,
           " is 0)");
  if (io::get_bool_or(j, "mtp_use_dedicated_embeddings", false, f))
    fail("multi-token prediction: ", f, " sets mtp_use_dedicated_embeddings, a module with an "
         "embedding of its own, which moex does not read (the released Qwen3-Next and Qwen3.5 "
         "modules use the main embedding)");
  for (const char* part : {"mtp.fc.weight", "mtp.pre_fc_norm_embedding.weight",
                           "mtp.pre_fc_norm_hidden.weight", "mtp.norm.weight",
                           "mtp.layers.0.input_layernorm.weight"})
    if (!has(part)) missing_part(file, part, false, main.num_layers);
  MtpPlan p;
  ModelConfig& c = p.cfg;
  c = main;
  c.num_layers = 1;
  c.layers.assign(1, layer);
  c.final_norm_name = "mtp.norm";
  p.enorm = "mtp.pre_fc_norm_embedding";
  p.hnorm = "mtp.pre_fc_norm_hidden";
  p.eh_proj = "mtp.fc";
  p.zero_first_embedding = false;
  return p;
}

}  // namespace

MtpPlan mtp_module_plan(const std::string& path, const ModelConfig& main,
                        const std::function<bool(const std::string&)>& has) {
  if (is_gguf_path(path)) {
    if (main.family != "glm4_moe")
      fail("multi-token prediction: GGUF file ", path, " is a ", main.family, " model; GGUF "
           "files carry the module for glm4moe only (llama.cpp drops DeepSeek's and Qwen's)");
    return mtp_module_plan(gguf_config_json(*gguf::GgufFile::open(path)),
                           path + " (GGUF metadata)", main, has, true);
  }
  const std::string file = path + "/config.json";
  return mtp_module_plan(io::read_json_file(file), file, main, has);
}

MtpPlan mtp_module_plan(const nlohmann::json& config, const std::string& file,
                        const ModelConfig& main,
                        const std::function<bool(const std::string&)>& has, bool gguf) {
  // A family with an mtp.* layout gives its module's decoder layer (Family::mtp_layer).
  if (!gguf)
    if (const std::optional<LayerPlan> layer =
            family_for(main.model_type, file).mtp_layer(main, config, file))
      return mtp_prefix_plan(config, file, main, has, *layer);
  if (main.family != "glm4_moe" && main.family != "deepseek_v3")
    fail("multi-token prediction: ", file, " is a ", main.family, " model; multi-token-"
         "prediction drafting runs on glm4_moe (GLM-4.5), deepseek_v3 (DeepSeek-V3, R1), "
         "qwen3_next (Qwen3-Next) and qwen3_5_moe (Qwen3.5) checkpoints");
  return nextn_layer_plan(config, file, main, has, gguf);
}

std::vector<ModuleSpec> mtp_module_table(const MtpPlan& plan,
                                         const std::vector<ModuleSpec>& skip) {
  std::vector<ModuleSpec> out;
  for (ModuleSpec& m : module_table(plan.cfg)) {
    bool skipped = false;
    for (const ModuleSpec& s : skip) skipped = skipped || s.path == m.path;
    if (!skipped) out.push_back(std::move(m));
  }
  const int64_t H = plan.cfg.hidden;
  for (const std::string* norm : {&plan.enorm, &plan.hnorm}) {
    ModuleSpec n;
    n.path = *norm;
    n.kind = ModuleKind::kNorm;
    n.role = TensorRole::kNorm;
    n.layer = 0;
    n.shape = {H};
    n.slot = Slot::kInputNorm;  // a per-layer norm: the converter treats it as the layers'
    out.push_back(std::move(n));
  }
  ModuleSpec eh;
  eh.path = plan.eh_proj;
  eh.kind = ModuleKind::kLinear;
  eh.role = TensorRole::kAttention;
  eh.layer = 0;
  eh.shape = {H, 2 * H};
  eh.slot = Slot::kQ;  // a Linear of the layer, quantized as its attention projections are
  out.push_back(std::move(eh));
  return out;
}

}  // namespace moex::model
