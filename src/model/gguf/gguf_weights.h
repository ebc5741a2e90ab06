// The tensors of a GGUF model under the names of its family's tensor table: each module's
// llama.cpp tensor (gguf_names.h) checked against the module's shape and turned into what
// moex's loaders read from an MLX checkpoint. F32 / F16 / BF16 stay views into the file's
// mapping; quantized types are repacked losslessly (gguf::repack) into packed codes with F32
// scales and biases; Q6_K, Q2_K and other types without a lossless repack are dequantized to
// F32 (exact: every ggml value is a float32). llama-arch q/k rows are put back into Hugging
// Face's rotate-half order (convert_hf_to_gguf.py permutes them for llama.cpp's RoPE).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "io/gguf/gguf_file.h"
#include "io/quant_config.h"
#include "io/safetensors.h"
#include "model/model_config.h"
#include "model/mtp_plan.h"

namespace moex::model {

struct GgufTensors {
  std::vector<io::TensorInfo> views;     // MLX names ("model.layers.0.self_attn.q_proj.weight")
  std::optional<io::QuantConfig> quant;  // one entry per repacked module; nullopt: all float
  std::shared_ptr<const void> storage;   // the file and every repacked / copied buffer
  int64_t repacked_bytes = 0;            // anonymous memory the repacks and copies took
};

// moex::Error naming the file and listing every problem (up to 20): a module whose llama.cpp
// tensor is missing or of another shape, a tensor nothing reads, a type moex cannot read.
// `mtp`: also the multi-token-prediction module's modules (model/mtp_plan.h's table of that
// plan), read from glm4moe's blk.N.nextn.* and blk.N.* (N = cfg.num_layers).
GgufTensors bind_gguf_tensors(std::unique_ptr<gguf::GgufFile> file, const ModelConfig& cfg,
                              const MtpPlan* mtp = nullptr);

// llama.cpp's name (without ".weight") of a module of the MTP module's table whose main model
// has n layers: its decoder layer's modules as layer n's, the rest as blk.n.nextn.*; "" for
// none.
std::string gguf_mtp_tensor_name(const ModuleSpec& m, int64_t n, std::string_view family);
// The same for a tensor of the module's own parts or its input norm under the directory's name
// ("model.layers.N.enorm.weight" -> "blk.N.nextn.enorm.weight"); "" for any other.
std::string gguf_mtp_tensor(const std::string& tensor, int64_t n);

}  // namespace moex::model
