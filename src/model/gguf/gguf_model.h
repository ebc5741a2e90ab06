// Loading a model from a GGUF file written for llama.cpp (docs/gguf.md, "Loading a model"):
// the hyper-parameters of `<arch>.*` become the config.json object of the moex family that
// reads the arch, llama.cpp's tensor names are bound through that family's tensor table, and
// the tensors are repacked losslessly into moex's formats in memory. `moex generate --model
// FILE.gguf` (and every other command that opens a model path) comes through here.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "chat/template_files.h"
#include "io/gguf/gguf_file.h"
#include "model/model_checkpoint.h"
#include "model/model_config.h"
#include "tokenizer/tokenizer.h"

namespace moex::model {

// Whether `path` names a GGUF model (ends in ".gguf"); every loader below dispatches on it.
bool is_gguf_path(std::string_view path);

// The config.json object (Hugging Face field names, with model_type) equivalent to the GGUF
// metadata of a supported arch (qwen3moe, llama with experts: Mixtral, qwen2moe, olmoe,
// glm4moe, deepseek2, gpt-oss; docs/gguf.md). moex::Error naming the file and key for an
// unsupported arch, a missing or out-of-range key, or a setting the moex family cannot express
// (RoPE scaling other than YaRN, an expert weight scale, partial RoPE, ...).
nlohmann::json gguf_config_json(const gguf::GgufFile& f);

// The ModelConfig of a GGUF file (gguf_config_json parsed by its family).
ModelConfig load_gguf_model_config(const std::string& path);

// The checkpoint of a GGUF file: config, quantization and tensors under the family's table
// names, checked by check_model_checkpoint as a directory's are.
ModelCheckpoint open_gguf_model_checkpoint(const std::string& path, const CheckOptions& opt);

// The tokenizer of tokenizer.ggml.* (model "gpt2": byte-level BPE).
Tokenizer load_gguf_tokenizer(const std::string& path);

// tokenizer.chat_template (tokenizer.chat_template.tool_use with tools, when present).
chat::ChatTemplateSource load_gguf_chat_template(const std::string& path, bool with_tools);

// A model path as every command takes it: a directory (tokenizer.json, chat template files)
// or a GGUF file.
Tokenizer load_model_tokenizer(const std::string& path);
chat::ChatTemplateSource load_model_chat_template(const std::string& path, bool with_tools);

}  // namespace moex::model
