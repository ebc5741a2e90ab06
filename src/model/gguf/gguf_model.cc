// Opening a GGUF file as a model: config (gguf_config.cc), tensors (gguf_weights.cc), and the
// dispatch every model-path loader shares.
#include "model/gguf/gguf_model.h"
#include "model/mtp_plan.h"

#include <filesystem>
#include <optional>

#include "core/error.h"
#include "model/family_registry.h"
#include "model/gguf/gguf_config_common.h"
#include "model/gguf/gguf_weights.h"

namespace moex::model {

bool is_gguf_path(std::string_view path) { return path.ends_with(".gguf"); }

namespace {

ModelConfig config_of(const gguf::GgufFile& f) {
  ModelConfig c =
      parse_model_config(gguf_config_json(f), f.path() + " (GGUF metadata as config.json)");
  gguf_config::adapt_parsed_config(c, f);
  return c;
}

}  // namespace

ModelConfig load_gguf_model_config(const std::string& path) {
  return config_of(*gguf::GgufFile::open(path));
}

ModelCheckpoint open_gguf_model_checkpoint(const std::string& path, const CheckOptions& opt) {
  std::unique_ptr<gguf::GgufFile> f = gguf::GgufFile::open(path);
  ModelConfig cfg = config_of(*f);
  std::optional<MtpPlan> mtp;
  if (opt.mtp_module) {
    const gguf::GgufFile& file = *f;
    const int64_t n = cfg.num_layers;
    // The module's parts the config checks for, by their llama.cpp names.
    const auto has = [&](const std::string& tensor) {
      const std::string name = gguf_mtp_tensor(tensor, n);
      return !name.empty() && file.find_tensor(name) != nullptr;
    };
    mtp = mtp_module_plan(gguf_config_json(file), path + " (GGUF metadata)", cfg, has, true);
  }
  GgufTensors t = bind_gguf_tensors(std::move(f), cfg, mtp ? &*mtp : nullptr);
  return check_model_checkpoint(std::move(cfg), std::move(t.quant),
                                io::Checkpoint::from_views(path, std::move(t.views),
                                                           std::move(t.storage)),
                                opt);
}

Tokenizer load_model_tokenizer(const std::string& path) {
  return is_gguf_path(path) ? load_gguf_tokenizer(path) : Tokenizer::load(path);
}

chat::ChatTemplateSource load_model_chat_template(const std::string& path, bool with_tools) {
  return is_gguf_path(path) ? load_gguf_chat_template(path, with_tools)
                            : chat::load_chat_template(path, with_tools);
}

}  // namespace moex::model
