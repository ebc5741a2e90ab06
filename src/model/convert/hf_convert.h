// `moex convert`: a Hugging Face checkpoint directory to the mlx-community layout, tensor for
// tensor what `mlx_lm convert` (mlx-lm 0.32.2) writes for the same recipe: sanitized
// (tensor_source.h), cast (--dtype rule), quantized per module (convert_recipe.h), in
// safetensors shards of at most 5 GiB with mlx-lm's index and config.json, plus the tokenizer,
// chat template and generation config files copied. Streams row blocks: resident memory stays
// near one block plus one module's scales, not the model. Writes into a temporary sibling of
// the output directory and renames it into place at the end.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/convert/convert_recipe.h"

namespace moex::model::convert {

struct ConvertOptions {
  std::string in_dir, out_dir;
  Recipe recipe;
  // Called after each row block with the source bytes read so far and the total.
  std::function<void(uint64_t done, uint64_t total)> progress;
  uint64_t block_bytes = uint64_t(32) << 20;  // source bytes per row block (at least one row)
  // Also write the multi-token-prediction module (model/engine/mtp_module.h) that mlx_lm
  // convert drops, quantized by the same recipe (--keep-mtp): `moex generate --spec mtp` then
  // runs on the converted checkpoint. Every other tensor is written as without it.
  bool keep_mtp = false;
};

struct ConvertSummary {
  std::string family;
  int64_t tensors = 0;
  int64_t quantized_modules = 0;
  uint64_t source_bytes = 0, written_bytes = 0;
  std::vector<std::string> shards;
  std::vector<std::string> copied_files;
};

// Throws moex::Error naming the file, tensor, field or flag at fault; the output directory
// then does not exist (a temporary sibling is removed, or, after a kill, left under a
// .tmp-<pid>- name that the next run removes).
ConvertSummary convert_checkpoint(const ConvertOptions& opt);

}  // namespace moex::model::convert
