// The float tensors `mlx_lm convert` holds after its family's sanitize, produced from a
// Hugging Face checkpoint row block by row block (so no tensor is ever whole in memory): per-
// expert tensors stacked, fused expert tensors split (outputs first) or split and transposed
// (Llama-4's inputs-first layout), DeepSeek's kv_b_proj split into embed_q / unembed_out,
// PyTorch's Conv1d layout, Qwen3-Next's zero-centred norms (+1), Bailing's normalized head, and
// gpt-oss's interleaved mxfp4 experts (passed through, already quantized).
// Names and layouts come from the family's tensor table (ModuleSpec::hf_pattern / hf_fused).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "io/safetensors.h"
#include "model/model_checkpoint.h"
#include "model/tensor_table.h"

namespace moex::model::convert {

struct RowSource {
  std::string name;            // the tensor's mlx-lm name
  DType dtype = DType::F32;    // the stored dtype, which sanitize keeps
  std::vector<int64_t> shape;  // mlx-lm's shape; rows = all but the last dim
  // Writes rows [row0, row0 + n) in `dtype` to dst (n * cols() elements).
  std::function<void(int64_t row0, int64_t n, uint8_t* dst)> fill;
  std::vector<const io::TensorInfo*> inputs;  // the stored tensors it reads
  // Optional: the byte ranges of the inputs that rows [0, rows_done) have read in full and
  // later rows never read, so the caller can drop their pages from the resident set as it
  // goes (direct and stacked sources; the others release their inputs at the end).
  std::function<std::vector<std::pair<const uint8_t*, uint64_t>>(int64_t rows_done)> consumed;

  int64_t cols() const { return shape.empty() ? 1 : shape.back(); }
  int64_t rows() const;
  uint64_t bytes() const { return uint64_t(rows() * cols()) * dtype_size(dtype); }
};

// The tensors of module m: its weight first, then its bias (Linear / Conv1d with a bias, or
// LayerNorm); a bare tensor (ModuleKind::kTensor) alone. `plus_one`: the module is one of the
// norms mlx-lm's sanitize stores as 1 + w for this checkpoint. Throws moex::Error naming the
// tensor for a layout it cannot convert (gpt-oss's original mxfp4 experts).
std::vector<RowSource> module_sources(const ModelCheckpoint& mc, const ModuleSpec& m,
                                      bool plus_one);

// True when mlx-lm's qwen3_next / qwen3_5 sanitize adds 1 to this module's weight for this
// checkpoint: the config asks for it, the experts are in a Hugging Face layout, and m is the
// final norm or a layer's input / post-attention / q / k norm.
bool norm_plus_one(const ModelCheckpoint& mc, const ModuleSpec& m);

}  // namespace moex::model::convert
