// llama.cpp's tensor name for a module of moex's tensor table (gguf-py's TENSOR_NAMES: the
// names convert_hf_to_gguf.py writes): the table stays the one list of a family's modules, and
// this maps each module's typed slot (and layer) onto the GGUF name.
#pragma once

#include <string>

#include "model/tensor_table.h"

namespace moex::model {

// "blk.3.ffn_gate_exps", "token_embd", ... (append ".weight" / ".bias"), or "" for a slot with
// no llama.cpp tensor that moex maps.
std::string gguf_tensor_name(const ModuleSpec& m);

}  // namespace moex::model
