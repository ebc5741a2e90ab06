// The one rule that says how a quantized module is read, shared by the checkpoint checker and
// the weight binder (docs/quant_formats.md, "Checkpoints"), as mlx-lm 0.32.2 loads it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "io/quant_config.h"
#include "io/safetensors.h"

namespace moex::model {

// The config's override naming `path` (nullopt if it says false); else the format the packed
// shapes of `weight` and `scales` imply for input width `in` (mlx-lm's infer_quant_config);
// else, when they imply nothing whole or supported, the global setting (whose mismatch the
// caller then reports). `weight` / `scales` may be null.
std::optional<io::ModuleQuant> resolve_module_quant(const io::QuantConfig& config,
                                                    const std::string& path,
                                                    const io::TensorInfo* weight,
                                                    const io::TensorInfo* scales, int64_t in);

}  // namespace moex::model
