// Decode profile names and sums (see decode_profile.h).
#include "model/engine/decode_profile.h"

namespace moex::model::engine {

const char* decode_op_name(DecodeOp op) {
  switch (op) {
    case DecodeOp::kEmbedding: return "embedding";
    case DecodeOp::kNormsResidual: return "norms_residual";
    case DecodeOp::kAttentionProjections: return "attention_projections";
    case DecodeOp::kAttentionCore: return "attention_core";
    case DecodeOp::kShortConv: return "short_conv";
    case DecodeOp::kLinearAttention: return "linear_attention";
    case DecodeOp::kStateSpace: return "state_space";
    case DecodeOp::kMoe: return "moe";
    case DecodeOp::kDenseMlp: return "dense_mlp";
    case DecodeOp::kLmHead: return "lm_head";
    case DecodeOp::kCount: break;
  }
  return "?";
}

void DecodeProfile::add(const DecodeProfile& o) {
  for (int i = 0; i < kNumDecodeOps; ++i) seconds[size_t(i)] += o.seconds[size_t(i)];
  steps += o.steps;
}

double DecodeProfile::total_seconds() const {
  double s = 0;
  for (double v : seconds) s += v;
  return s;
}

}  // namespace moex::model::engine
