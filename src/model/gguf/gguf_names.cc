// gguf_tensor_name: moex's slots onto llama.cpp's tensor names (gguf-py constants.py,
// TENSOR_NAMES; llama.cpp src/llama-arch.cpp LLM_TENSOR_NAMES).
#include "model/gguf/gguf_names.h"

namespace moex::model {
namespace {

const char* layer_suffix(const ModuleSpec& m, std::string_view family) {
  switch (m.slot) {
    case Slot::kInputNorm: return "attn_norm";
    // glm4moe, gpt-oss, qwen3next and qwen35moe call the norm before the FFN attn_post_norm
    // (llama-arch.cpp); Nemotron-H's FFN blocks have one norm, attn_norm as every block's.
    case Slot::kPostNorm:
      if (family == "nemotron_h") return "attn_norm";
      return family == "glm4_moe" || family == "gpt_oss" || family == "qwen3_next" ||
                     family == "qwen3_5_moe"
                 ? "post_attention_norm"
                 : "ffn_norm";
    case Slot::kQ: return "attn_q";
    case Slot::kK: return "attn_k";
    case Slot::kV: return "attn_v";
    case Slot::kO: return "attn_output";
    case Slot::kQNorm: return "attn_q_norm";
    case Slot::kKNorm: return "attn_k_norm";
    case Slot::kSinks: return "attn_sinks";  // stored as "<name>.weight"
    // LFM2's gated short convolution: in_proj [3H, H] (B, C, x), the depthwise kernel [H, L]
    // (moex's Conv1d [H, L, 1]), out_proj.
    case Slot::kConvIn: return "shortconv.in_proj";
    case Slot::kConv: return "shortconv.conv";
    case Slot::kConvOut: return "shortconv.out_proj";
    // deepseek2's multi-head latent attention; kv_b_proj is attn_kv_b in older files, split
    // into attn_k_b (transposed: embed_q) and attn_v_b (unembed_out) in current ones.
    case Slot::kMlaQA: return "attn_q_a";
    case Slot::kMlaQANorm: return "attn_q_a_norm";
    case Slot::kMlaQB: return "attn_q_b";
    case Slot::kMlaKvA: return "attn_kv_a_mqa";
    case Slot::kMlaKvANorm: return "attn_kv_a_norm";
    case Slot::kMlaKvB: return "attn_kv_b";
    case Slot::kMlaEmbedQ: return "attn_k_b";
    case Slot::kMlaUnembedOut: return "attn_v_b";
    // Gated DeltaNet (qwen3next): the converter's split of in_proj_qkvz into [q; k; v] and z,
    // in_proj_ba as it is, the conv squeezed to [C, L], dt_bias as "ssm_dt.bias", A as the bare
    // "ssm_a" (-exp(A_log)), the gated norm, out_proj.
    case Slot::kGdnQkvz: return "ssm_in";  // files of the first converter, unsplit
    case Slot::kGdnQkv: return "attn_qkv";
    case Slot::kGdnZ: return "attn_gate";
    case Slot::kGdnBa: return "ssm_ba";
    case Slot::kGdnB: return "ssm_beta";  // qwen35moe's separate in_proj_b / in_proj_a
    case Slot::kGdnA: return "ssm_alpha";
    case Slot::kGdnConv: return "ssm_conv1d";
    case Slot::kGdnDtBias: return "ssm_dt";
    case Slot::kGdnALog: return "ssm_a";
    case Slot::kGdnNorm: return "ssm_norm";
    case Slot::kGdnOut: return "ssm_out";
    // Mamba-2 (nemotron_h_moe): ssm_a and ssm_d bare and [heads, 1], the gated norm
    // [groups, inner / groups].
    case Slot::kMambaIn: return "ssm_in";
    case Slot::kMambaConv: return "ssm_conv1d";
    case Slot::kMambaDtBias: return "ssm_dt";
    case Slot::kMambaALog: return "ssm_a";
    case Slot::kMambaD: return "ssm_d";
    case Slot::kMambaNorm: return "ssm_norm";
    case Slot::kMambaOut: return "ssm_out";
    case Slot::kRouter: return "ffn_gate_inp";
    case Slot::kExpertBias: return "exp_probs_b";  // stored as "<name>.bias"
    case Slot::kExperts:
      switch (m.proj) {
        case ExpertProj::kGate: return "ffn_gate_exps";
        case ExpertProj::kUp: return "ffn_up_exps";
        case ExpertProj::kDown: return "ffn_down_exps";
        case ExpertProj::kNone: return nullptr;
      }
      return nullptr;
    case Slot::kSharedGate: return "ffn_gate_shexp";
    case Slot::kSharedUp: return "ffn_up_shexp";
    case Slot::kSharedDown: return "ffn_down_shexp";
    case Slot::kSharedExpertGate: return "ffn_gate_inp_shexp";
    case Slot::kDenseGate: return "ffn_gate";
    case Slot::kDenseUp: return "ffn_up";
    case Slot::kDenseDown: return "ffn_down";
    default: return nullptr;
  }
}

}  // namespace

const char* gguf_bare_suffix(Slot slot) {
  switch (slot) {
    case Slot::kSinks: return ".weight";
    case Slot::kGdnALog:
    case Slot::kMambaALog:
    case Slot::kMambaD: return "";
    default: return ".bias";
  }
}

std::string gguf_tensor_name(const ModuleSpec& m, std::string_view family) {
  if (m.layer < 0) {
    switch (m.slot) {
      case Slot::kEmbedding: return "token_embd";
      // lfm2moe's final norm keeps the name of LFM2's embedding_norm (llama-arch.cpp
      // LLM_TENSOR_OUTPUT_NORM_LFM2).
      case Slot::kFinalNorm: return family == "lfm2_moe" ? "token_embd_norm" : "output_norm";
      case Slot::kLmHead: return "output";
      default: return "";
    }
  }
  const char* s = layer_suffix(m, family);
  return s ? "blk." + std::to_string(m.layer) + "." + s : "";
}

}  // namespace moex::model
