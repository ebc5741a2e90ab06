// CPU entry points of the MoE expert kernels whose contracts are in moe_contract.h: the fused
// decode path, the gather_qmm op of the fallback path, and the names they log under. Each call
// picks its instruction set once, from moex::active_isa(). Kernels never throw on bad input:
// callers check moe_kernels_unsupported_reason() / qdot_unsupported_reason() first.
#pragma once

#include <string>

#include "core/isa.h"
#include "kernels/elementwise.h"
#include "kernels/moe_contract.h"

namespace moex::kernels {

// Stage A (all selected experts' gate/up rows, one parallel region) writes act[K][Dff] in f32;
// stage B (all down rows) writes partials[k][h] = score_k * dot; out[h] = sum over k in order.
// Every weight byte is read once; the result is bit-identical for any thread count.
void moe_decode_fused(const FusedDecodeArgs& args);

// MLX gather_qmm with transpose=True. Entries sharing an expert are grouped, so each row tile of
// an expert is read from memory once and reused (from cache) by every entry that selects it.
void gather_qmm(const GatherQmmArgs& args);

// nullptr when every projection of `ex` meets the kernel preconditions (valid bits and group
// size, matching dimensions, gate present unless squared ReLU), else a static description.
// This is not the dispatch policy (which also declines on Dff caps and bit widths).
const char* moe_kernels_unsupported_reason(const MoeExpertsView& ex);

// Names that state what ran: "moe_decode_fused_q4g64__avx512vnni" (with "_down_q6g64" when the
// down projection differs), "gather_qmm_q4g64__avx2", "apply_activation_swiglu_scalar".
std::string moe_decode_fused_name(const MoeExpertsView& ex, Isa isa);
std::string gather_qmm_name(const QuantWeightsView& w, Isa isa);
std::string apply_activation_name(Activation act, Isa isa);

}  // namespace moex::kernels
