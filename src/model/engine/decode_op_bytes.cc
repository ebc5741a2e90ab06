// decode_op_weight_bytes (see decode_op_bytes.h).
#include "model/engine/decode_op_bytes.h"

namespace moex::model::engine {

std::array<int64_t, kNumDecodeOps> decode_op_weight_bytes(const ModelConfig& cfg,
                                                          const ModelWeights& w,
                                                          const WeightBytes& wb) {
  std::array<int64_t, kNumDecodeOps> out{};
  auto bytes = [](const ops::Linear& l) { return l.w.valid() ? l.w.weight_bytes() : int64_t{0}; };
  auto stack_bytes = [](const kernels::QuantWeightsView& v) {  // MLA's per-head matrices
    return v.experts * v.n * v.format().row_bytes_with_scales(v.k);
  };
  auto op = [&](DecodeOp o) -> int64_t& { return out[size_t(o)]; };
  for (int64_t i = 0; i < cfg.num_layers; ++i) {
    const LayerPlan& plan = cfg.layers[size_t(i)];
    const LayerWeights& lw = w.layers[size_t(i)];
    if (plan.mixer == MixerKind::kAttention)
      op(DecodeOp::kAttentionProjections) +=
          bytes(lw.attn.q) + bytes(lw.attn.k) + bytes(lw.attn.v) + bytes(lw.attn.o);
    else if (plan.mixer == MixerKind::kShortConv)
      op(DecodeOp::kShortConv) += bytes(lw.conv.in_proj) + bytes(lw.conv.out_proj);
    else if (plan.mixer == MixerKind::kMla)
      op(DecodeOp::kAttentionProjections) +=
          bytes(lw.mla.q) + bytes(lw.mla.q_a) + bytes(lw.mla.q_b) + bytes(lw.mla.kv_a) +
          bytes(lw.mla.o) + stack_bytes(lw.mla.embed_q) + stack_bytes(lw.mla.unembed_out);
    else if (plan.mixer == MixerKind::kGatedDeltaNet)
      for (const ops::Linear* l : {&lw.gdn.qkvz, &lw.gdn.ba, &lw.gdn.qkv, &lw.gdn.z, &lw.gdn.b,
                                   &lw.gdn.a, &lw.gdn.out_proj})
        op(DecodeOp::kLinearAttention) += bytes(*l);
    else if (plan.mixer == MixerKind::kMamba2)
      op(DecodeOp::kStateSpace) += bytes(lw.mamba.in_proj) + bytes(lw.mamba.out_proj);
    if (plan.ffn == FfnKind::kDense)
      op(DecodeOp::kDenseMlp) += bytes(lw.dense.gate) + bytes(lw.dense.up) + bytes(lw.dense.down);
    else if (plan.ffn == FfnKind::kMoe)
      op(DecodeOp::kMoe) += bytes(lw.moe.router) + bytes(lw.moe.shared_gate);
    // Gemma-4's dense MLP beside the experts runs inside the MoE op's clock (ffn_layer).
    if (plan.ffn == FfnKind::kMoe && plan.parallel_dense_dff > 0)
      op(DecodeOp::kMoe) += bytes(lw.dense.gate) + bytes(lw.dense.up) + bytes(lw.dense.down);
  }
  op(DecodeOp::kMoe) += wb.routed_experts + wb.shared_experts;
  op(DecodeOp::kLmHead) = wb.lm_head;
  op(DecodeOp::kEmbedding) = wb.embedding_row;
  return out;
}

}  // namespace moex::model::engine
