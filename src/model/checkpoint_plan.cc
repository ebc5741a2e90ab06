// Synthetic checkpoint planning: quantization decisions, the quantization section of
// config.json and the tensor list of a preset.
#include "model/checkpoint_plan.h"

#include "core/error.h"
#include "model/family_registry.h"
#include "quant/format.h"

namespace moex::model {

void check_synth_quant(const SynthQuant& q) {
  if (quant::is_fp_mode(q.mode)) {
    const char* m = quant::mode_name(q.mode);
    if (q.bits != quant::fp_mode_bits(q.mode) || q.group_size != quant::fp_mode_group_size(q.mode))
      fail("--mode ", m, " has bits ", quant::fp_mode_bits(q.mode), " and group size ",
           quant::fp_mode_group_size(q.mode), "; --bits/--group-size cannot change them");
    if (q.router_bits != 0 || q.down_bits != 0)
      fail("--mode ", m, " quantizes routers and down projections in ", m,
           " too; --router-bits/--down-bits do not apply");
    return;
  }
  if (q.bits != 0 && !quant::is_valid_bits(q.bits))
    fail("--bits must be 0 (unquantized) or one of 2, 3, 4, 5, 6, 8; got ", q.bits);
  if (!quant::is_valid_group_size(q.group_size))
    fail("--group-size must be 32, 64 or 128; got ", q.group_size);
  if (q.router_bits != 0 && !quant::is_valid_bits(q.router_bits))
    fail("--router-bits must be 0 (same as --bits) or one of 2, 3, 4, 5, 6, 8; got ", q.router_bits);
  if (q.down_bits != 0 && !quant::is_valid_bits(q.down_bits))
    fail("--down-bits must be 0 (same as --bits) or one of 2, 3, 4, 5, 6, 8; got ", q.down_bits);
  if (q.bits == 0 && (q.down_bits != 0))
    fail("--down-bits needs a quantized model (--bits > 0)");
}

std::optional<io::ModuleQuant> synth_module_quant(const ModuleSpec& m, const SynthQuant& q) {
  if (q.bits == 0 || !m.quantizable() || m.in_dim() % q.group_size != 0) return std::nullopt;
  int bits = q.bits;
  if (m.role == TensorRole::kRouter && q.router_bits != 0) bits = q.router_bits;
  if (m.role == TensorRole::kExperts && m.proj == ExpertProj::kDown && q.down_bits != 0)
    bits = q.down_bits;
  return io::ModuleQuant{bits, q.group_size, quant::mode_name(q.mode)};
}

nlohmann::json quantization_section(const std::vector<ModuleSpec>& modules, const SynthQuant& q) {
  if (q.bits == 0) return nullptr;
  nlohmann::json s;
  s["group_size"] = q.group_size;
  s["bits"] = q.bits;
  s["mode"] = quant::mode_name(q.mode);
  for (const ModuleSpec& m : modules) {
    const auto mq = synth_module_quant(m, q);
    if (mq && (mq->bits != q.bits || mq->group_size != q.group_size))
      s[m.path] = {{"group_size", mq->group_size}, {"bits", mq->bits}};
  }
  return s;
}

int64_t CheckpointPlan::total_bytes() const {
  int64_t n = 0;
  for (const TensorRecord& t : tensors) n += t.bytes();
  return n;
}

DType parse_model_dtype(const std::string& s) {
  if (s == "bf16" || s == "bfloat16") return DType::BF16;
  if (s == "f16" || s == "float16") return DType::F16;
  if (s == "f32" || s == "float32") return DType::F32;
  fail("--dtype must be bf16, f16 or f32; got '", s, "'");
}

namespace {

const char* torch_dtype_name(DType t) {
  return t == DType::BF16 ? "bfloat16" : t == DType::F16 ? "float16" : "float32";
}

}  // namespace

CheckpointPlan plan_checkpoint(nlohmann::json config_json, const SynthQuant& q, DType dtype) {
  check_synth_quant(q);
  CheckpointPlan plan;
  plan.dtype = dtype;
  config_json.erase("quantization");
  config_json.erase("quantization_config");
  if (config_json.contains("text_config")) config_json["text_config"]["torch_dtype"] = torch_dtype_name(dtype);
  config_json["torch_dtype"] = torch_dtype_name(dtype);
  plan.config = parse_model_config(config_json, "synthetic config.json");
  plan.modules = module_table(plan.config);
  plan.tensors = expand_tensors(plan.modules, dtype,
                                [&](const ModuleSpec& m) { return synth_module_quant(m, q); });
  const nlohmann::json qs = quantization_section(plan.modules, q);
  if (!qs.is_null()) {
    config_json["quantization"] = qs;
    config_json["quantization_config"] = qs;
  }
  plan.config_json = std::move(config_json);
  return plan;
}

CheckpointPlan plan_preset_checkpoint(const ModelPreset& p, int64_t num_layers, const SynthQuant& q,
                                      DType dtype) {
  return plan_checkpoint(preset_config_json(p, num_layers), q, dtype);
}

}  // namespace moex::model
