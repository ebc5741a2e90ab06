// llama.cpp's tensor name for a module of moex's tensor table (gguf-py's TENSOR_NAMES: the
// names convert_hf_to_gguf.py writes): the table stays the one list of a family's modules, and
// this maps each module's typed slot (and layer) onto the GGUF name.
#pragma once

#include <string>
#include <string_view>

#include "model/tensor_table.h"

namespace moex::model {

// "blk.3.ffn_gate_exps", "token_embd", ... (append ".weight" / ".bias"; bare tensors take
// gguf_bare_suffix), or "" for a slot with no llama.cpp tensor that moex maps. `family`
// (ModelConfig::family) picks the names that differ by arch.
std::string gguf_tensor_name(const ModuleSpec& m, std::string_view family = "");

// The suffix llama.cpp gives a bare tensor module (ModuleKind::kTensor): ".bias" for the expert
// bias and dt_bias, ".weight" for gpt-oss's sinks, none for ssm_a.
const char* gguf_bare_suffix(Slot slot);

}  // namespace moex::model
