// ERNIE-4.5 MoE (llama.cpp conversion/ernie.py Ernie4_5MoeModel, src/models/ernie4-5.cpp reads
// the keys, src/models/ernie4-5-moe.cpp the graph) as moex's ernie4_5_moe family: interleaved
// (NORM) RoPE over q/k rows the converter leaves as they are, no q/k norms, leading dense
// layers then MoE layers every interleave_moe_layer_step, softmax over all experts with the
// top-k renormalized (hard-coded in the graph), the selection biased by exp_probs_b when the
// file has it, ungated shared experts. docs/gguf.md lists the
// keys, where each was checked, and where llama.cpp's reading differs from the model's.
#include "core/error.h"
#include "model/gguf/gguf_config_common.h"

namespace moex::model::gguf_config {

using gguf_keys::ArchKeys;
using nlohmann::json;

json ernie4_5_moe(const ArchKeys& k) {
  json j = common_fields(k, "ernie4_5_moe");
  const int64_t layers = j["num_hidden_layers"];
  j["head_dim"] = head_dim(k, j, false);
  j["intermediate_size"] = k.size("feed_forward_length", 1, limits::kMaxDff);
  const int64_t moe_dff = k.size("expert_feed_forward_length", 1, limits::kMaxDff);
  j["moe_intermediate_size"] = moe_dff;
  j["moe_num_experts"] = k.size("expert_count", 1, limits::kMaxExperts);
  j["moe_k"] = j["num_experts_per_tok"];
  // Which layers are MoE: llama.cpp's graph takes layer i >= leading_dense_block_count with
  // (i + 1) % interleave_moe_layer_step == 0 (its loader requires the step), the model's
  // moe_layer_start_index / moe_layer_interval with the end index at the last layer.
  j["moe_layer_start_index"] = k.size_or("leading_dense_block_count", 0, 0, layers - 1);
  j["moe_layer_end_index"] = layers - 1;
  j["moe_layer_interval"] = k.size("interleave_moe_layer_step", 1, layers);
  // The shared experts: llama.cpp sizes ffn_*_shexp by expert_shared_feed_forward_length (0 or
  // absent: none); moex's family by moe_num_shared_experts x the expert width.
  const int64_t shexp = k.size_or("expert_shared_feed_forward_length", 0, 0, limits::kMaxDff);
  if (shexp % moe_dff != 0)
    k.refuse("expert_shared_feed_forward_length",
             str_cat("expected a multiple of expert_feed_forward_length (", moe_dff, ")"));
  j["moe_num_shared_experts"] = shexp / moe_dff;
  j["moe_gate_act"] = "softmax";  // LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX in the graph
  j["use_bias"] = false;
  // The converter writes a checkpoint's moe_statics.e_score_correction_bias (moe_use_aux_free)
  // as exp_probs_b, which llama.cpp's graph adds to the softmax scores for the selection only
  // (build_moe_ffn with exp_probs_b), as the Hugging Face model does. A file with it asks the
  // family for that selection (its route_with_correction_bias field; mlx-lm's port drops the
  // bias). Then every MoE layer must hold it, and the binder refuses a layer that lacks it.
  bool biased = false;
  for (int64_t i = 0; i < layers && !biased; ++i)
    biased = k.file().find_tensor(str_cat("blk.", i, ".exp_probs_b.bias")) != nullptr;
  j["route_with_correction_bias"] = biased;
  return j;
}

}  // namespace moex::model::gguf_config
