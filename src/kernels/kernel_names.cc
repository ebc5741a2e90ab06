// Kernel names (what ran, for logs, test ids and benchmark ids) and the kernel-level
// precondition check of a MoE expert view.
#include "core/error.h"
#include "kernels/moe_kernels.h"
#include "kernels/qdot.h"

namespace moex::kernels {
namespace {

std::string qg(const QuantWeightsView& w) {
  if (quant::is_fp_mode(w.mode)) return quant::mode_name(w.mode);
  if (quant::is_ggml_mode(w.mode)) return quant::ggml_type_name(w.format());
  if (w.mode == quant::Mode::kFloat) return str_cat("float", w.bits);
  return str_cat("q", w.bits, "g", w.group_size);
}

}  // namespace

const char* moe_kernels_unsupported_reason(const MoeExpertsView& ex) {
  const bool has_gate = ex.act != Activation::kSquaredReLU;
  if (const char* r = qdot_unsupported_reason(ex.up)) return r;
  if (const char* r = qdot_unsupported_reason(ex.down)) return r;
  if (has_gate) {
    if (const char* r = qdot_unsupported_reason(ex.gate)) return r;
    if (ex.gate.n != ex.up.n || ex.gate.k != ex.up.k || ex.gate.experts != ex.up.experts)
      return "gate and up projections must have the same shape";
  }
  if (ex.down.k != ex.up.n || ex.down.n != ex.up.k || ex.down.experts != ex.up.experts)
    return "down projection must map Dff back to Din for the same experts";
  return nullptr;
}

std::string moe_decode_fused_name(const MoeExpertsView& ex, Isa isa) {
  std::string name = "moe_decode_fused_" + qg(ex.up);
  if (ex.down.bits != ex.up.bits || ex.down.group_size != ex.up.group_size)
    name += "_down_" + qg(ex.down);
  return name + isa_kernel_suffix(isa);
}

std::string gather_qmm_name(const QuantWeightsView& w, Isa isa) {
  return "gather_qmm_" + qg(w) + isa_kernel_suffix(isa);
}

std::string apply_activation_name(Activation act, Isa isa) {
  // No integer dot products here: the AVX-512 body is plain AVX-512F.
  const char* suffix = isa == Isa::kAvx512 ? "__avx512" : isa_kernel_suffix(isa);
  return str_cat("apply_activation_", activation_name(act), suffix);
}

}  // namespace moex::kernels
