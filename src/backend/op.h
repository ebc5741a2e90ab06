// The ops of the backend contract (model_backend.h) by name: what ModelBackend::supports_op
// answers for, what a refusal names, and the ids of the conformance harness's rows.
#pragma once

namespace moex::backend {

#define MOEX_BACKEND_OPS(X)                                                                \
  X(kLinear, "linear") X(kLinearSameInput, "linear_same_input") X(kRmsNorm, "rms_norm")     \
  X(kLayerNorm, "layer_norm") X(kRope, "rope") X(kKvAppend, "kv_append")                    \
  X(kAttention, "attention") X(kEmbeddingRows, "embedding_rows") X(kSwiglu, "swiglu")       \
  X(kGatedActivation, "gated_activation") X(kGatedDelta, "gated_delta")                     \
  X(kSsmScan, "ssm_scan") X(kCausalConvSilu, "causal_conv_silu")                            \
  X(kGatedRmsNorm, "gated_rms_norm") X(kMultiLinear, "multi_linear")                        \
  X(kMlaAttention, "mla_attention") X(kAddScaled, "add_scaled") X(kScale, "scale")          \
  X(kSigmoidGate, "sigmoid_gate") X(kDivideAndSoftcap, "divide_and_softcap")                \
  X(kQueryTemperature, "query_temperature") X(kSplitHalves, "split_halves") X(kCopy, "copy")  \
  X(kShortConv, "short_conv") X(kCopyColumns, "copy_columns") X(kDtSoftplus, "dt_softplus")  \
  X(kDeltaGates, "delta_gates")

enum class Op {
#define MOEX_BACKEND_OP_ENUM(id, name) id,
  MOEX_BACKEND_OPS(MOEX_BACKEND_OP_ENUM)
#undef MOEX_BACKEND_OP_ENUM
      kCount
};

// "linear", "rms_norm", ...: the name the contract's member function has.
const char* op_name(Op op);

}  // namespace moex::backend
