// mlx_lm convert's per-module decisions (see convert_recipe.h).
#include "model/convert/convert_recipe.h"

#include <cctype>

#include "core/error.h"

namespace moex::model::convert {

namespace {

struct MixedBits {
  int low = 0, high = 6;
};

MixedBits mixed_bits(const std::string& recipe) {
  if (recipe == "mixed_2_6") return {2, 6};
  if (recipe == "mixed_3_4") return {3, 4};
  if (recipe == "mixed_3_6") return {3, 6};
  if (recipe == "mixed_4_6") return {4, 6};
  fail("--quant-predicate must be mixed_2_6, mixed_3_4, mixed_3_6 or mixed_4_6; got '", recipe,
       "'");
}

std::vector<std::string> split_dots(const std::string& s) {
  std::vector<std::string> parts(1);
  for (char c : s) {
    if (c == '.')
      parts.emplace_back();
    else
      parts.back() += c;
  }
  return parts;
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace

quant::Mode parse_q_mode(const std::string& s) {
  if (const std::optional<quant::Mode> m = quant::mode_from_name(s)) return *m;
  fail("--q-mode must be affine, mxfp4, mxfp8 or nvfp4; got '", s, "'");
}

Recipe resolve_recipe(Recipe r) {
  const char* mode = quant::mode_name(r.mode);
  if (!r.quantize) {
    if (r.bits || r.group_size || r.mode != quant::Mode::kAffine || !r.predicate.empty())
      fail("--q-bits, --q-group-size, --q-mode and --quant-predicate quantize: they need -q");
    return r;
  }
  if (!r.predicate.empty()) {
    (void)mixed_bits(r.predicate);
    if (r.mode != quant::Mode::kAffine)
      fail("--quant-predicate ", r.predicate, " quantizes affine only; got --q-mode ", mode);
  }
  if (quant::is_fp_mode(r.mode)) {
    const int bits = quant::fp_mode_bits(r.mode), gs = quant::fp_mode_group_size(r.mode);
    if ((r.bits && r.bits != bits) || (r.group_size && r.group_size != gs))
      fail("--q-mode ", mode, " has bits ", bits, " and group size ", gs,
           "; --q-bits/--q-group-size cannot change them");
    r.bits = bits;
    r.group_size = gs;
    return r;
  }
  if (!r.bits) r.bits = 4;
  if (!r.group_size) r.group_size = 64;
  if (!quant::is_valid_bits(r.bits))
    fail("--q-bits must be 2, 3, 4, 5, 6 or 8 for affine quantization; got ", r.bits);
  if (!quant::is_valid_group_size(r.group_size))
    fail("--q-group-size must be 32, 64 or 128 for affine quantization; got ", r.group_size);
  return r;
}

std::optional<DType> conversion_dtype(const Recipe& r, const nlohmann::json& config) {
  if (r.dtype) return r.dtype;
  const nlohmann::json* name = nullptr;
  if (config.contains("torch_dtype") && !config["torch_dtype"].is_null())
    name = &config["torch_dtype"];
  else if (config.contains("text_config") && config["text_config"].is_object() &&
           config["text_config"].contains("dtype"))
    name = &config["text_config"]["dtype"];
  if (!name || !name->is_string()) return std::nullopt;
  const std::string s = name->get<std::string>();
  if (s == "bfloat16") return DType::BF16;
  if (s == "float16") return DType::F16;
  if (s == "float32") return DType::F32;
  return std::nullopt;
}

RecipePlan::RecipePlan(const ModelConfig& cfg, const Family& family,
                       const std::vector<ModuleSpec>& modules, const Recipe& recipe,
                       bool fine_grained)
    : cfg_(cfg), family_(family), r_(recipe), fine_grained_(fine_grained) {
  if (r_.quantize && !r_.predicate.empty()) {
    // mlx-lm: the layer index is the first all-digit part of the first module named down_proj.
    const ModuleSpec* first = nullptr;
    for (const ModuleSpec& m : modules)
      if (m.path.find("down_proj") != std::string::npos) {
        first = &m;
        break;
      }
    if (!first)
      fail("--quant-predicate ", r_.predicate, ": this ", cfg.family,
           " model has no module named down_proj, which the mixed recipes need (as mlx-lm's)");
    const std::vector<std::string> parts = split_dots(first->path);
    layer_location_ = parts.size() - 1;
    for (size_t i = 0; i < parts.size(); ++i)
      if (all_digits(parts[i])) {
        layer_location_ = i;
        break;
      }
  }
  decisions_.reserve(modules.size());
  for (const ModuleSpec& m : modules) decisions_.push_back(decide(m));
}

ModuleDecision RecipePlan::mixed(const ModuleSpec& m) const {
  const MixedBits mb = mixed_bits(r_.predicate);
  const std::vector<std::string> parts = split_dots(m.path);
  int64_t index = 0;
  if (parts.size() > layer_location_) {
    if (!all_digits(parts[layer_location_]))
      fail("--quant-predicate ", r_.predicate, ": module '", m.path,
           "' has no layer index at part ", layer_location_ + 1,
           " (where the first down_proj has it)");
    index = std::stoll(parts[layer_location_]);
  }
  const int64_t n = cfg_.num_layers;
  const bool more = index < n / 8 || index >= 7 * n / 8 || (index - n / 8) % 3 == 2;
  const auto has = [&](const char* s) { return m.path.find(s) != std::string::npos; };
  int bits = mb.low;
  if ((has("v_proj") || has("v_a_proj") || has("v_b_proj")) && more)
    bits = mb.high;
  else if (has("down_proj") && more)
    bits = mb.high;
  else if (has("lm_head") || has("shared_head.head"))  // the MTP module's head (--keep-mtp)
    bits = mb.high;
  ModuleDecision d{true, bits, r_.group_size, quant::Mode::kAffine, nullptr};
  d.config_entry = {{"group_size", r_.group_size}, {"bits", bits}, {"mode", "affine"}};
  return d;
}

ModuleDecision RecipePlan::decide(const ModuleSpec& m) const {
  // gpt-oss's experts arrive in mxfp4 (fine_grained): mlx-lm loads them quantized and leaves
  // them as they are.
  if (fine_grained_ && m.hf_fused == HfFusedExperts::kInterleavedMxfp4) return {};
  if (!r_.quantize || !m.quantizable() || m.in_dim() % r_.group_size != 0) return {};
  if (!r_.predicate.empty()) return mixed(m);
  if (const auto o = family_.reference_quant_override(cfg_, m.path)) {
    if (m.in_dim() % o->group_size != 0)
      fail("module '", m.path, "': mlx-lm's ", cfg_.family, " predicate quantizes it with group ",
           o->group_size, ", which does not divide its input width ", m.in_dim(),
           " (mlx_lm convert fails the same way)");
    ModuleDecision d{true, o->bits, o->group_size, quant::Mode::kAffine, nullptr};
    d.config_entry = {{"group_size", o->group_size}, {"bits", o->bits}};
    return d;
  }
  ModuleDecision d{true, r_.bits, r_.group_size, r_.mode, nullptr};
  if (fine_grained_)
    d.config_entry = {
        {"group_size", r_.group_size}, {"bits", r_.bits}, {"mode", quant::mode_name(r_.mode)}};
  return d;
}

nlohmann::json RecipePlan::quantization_block(const std::vector<ModuleSpec>& modules) const {
  if (!r_.quantize) return nullptr;
  nlohmann::json q = {
      {"group_size", r_.group_size}, {"bits", r_.bits}, {"mode", quant::mode_name(r_.mode)}};
  for (size_t i = 0; i < modules.size() && i < decisions_.size(); ++i)
    if (!decisions_[i].config_entry.is_null()) q[modules[i].path] = decisions_[i].config_entry;
  return q;
}

}  // namespace moex::model::convert
