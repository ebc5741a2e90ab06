// decide_path() and the strict resolution of its settings (see dispatch_policy.h).
#include "moe/dispatch_policy.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "core/strict_parse.h"
#include "quant/format.h"

namespace moex::moe {

const char* path_name(Path p) { return p == Path::kFused ? "fused" : "fallback"; }

const char* backend_name(Backend b) { return b == Backend::kCpu ? "cpu" : "cuda"; }

Backend parse_backend(std::string_view s, std::string_view what) {
  if (s == "cpu") return Backend::kCpu;
  if (s == "cuda") return Backend::kCuda;
  fail(what, ": '", s, "' is not a backend; expected cpu or cuda");
}

const char* decline_reason_name(DeclineReason r) {
  switch (r) {
    case DeclineReason::kNotSingleToken:
      return "not_single_token";
    case DeclineReason::kNotQuantized:
      return "not_quantized";
    case DeclineReason::kBitsUnsupported:
      return "bits_unsupported";
    case DeclineReason::kGroupSizeMismatch:
      return "group_size_mismatch";
    case DeclineReason::kNotStacked:
      return "not_stacked";
    case DeclineReason::kDffAboveCap:
      return "dff_above_cap";
    case DeclineReason::kDisabled:
      return "disabled";
    case DeclineReason::kNoFusedKernelForBackend:
      return "no_fused_kernel_for_backend";
  }
  return "?";
}

const char* fused_mode_name(FusedMode m) {
  switch (m) {
    case FusedMode::kAuto:
      return "auto";
    case FusedMode::kOn:
      return "on";
    case FusedMode::kOff:
      return "off";
  }
  return "?";
}

const char* setting_source_name(SettingSource s) {
  switch (s) {
    case SettingSource::kFlag:
      return "flag";
    case SettingSource::kEnv:
      return "env";
    case SettingSource::kCalibration:
      return "calibration";
    case SettingSource::kBackendDefault:
      return "default";
    case SettingSource::kMeasurement:
      return "measurement";
  }
  return "?";
}

int64_t backend_default_max_dff(Backend b) {
  return b == Backend::kCuda ? kCudaDefaultMaxDff : kCpuDefaultMaxDff;
}

namespace {

FusedMode parse_fused_flag(std::string_view s) {
  std::string l;
  for (char c : s) l += char(std::tolower(static_cast<unsigned char>(c)));
  if (l == "auto") return FusedMode::kAuto;
  if (l == "on") return FusedMode::kOn;
  if (l == "off") return FusedMode::kOff;
  fail("--fused: '", s, "' is not a mode; expected auto, on or off");
}

int64_t parse_max_dff(std::string_view s, std::string_view what) {
  return parse_int_strict(s, what, 1, kMaxDffLimit);
}

}  // namespace

FusedSettings resolve_fused_settings(const RawFusedSettings& raw) {
  FusedSettings s;
  // Parse every given value, even those a higher-precedence one overrides: a malformed
  // environment variable is an error whether or not a flag shadows it.
  std::optional<FusedMode> env_mode;
  if (raw.env_fused)
    env_mode = parse_bool_switch(*raw.env_fused, kEnvFusedMoe) ? FusedMode::kAuto : FusedMode::kOff;
  std::optional<int64_t> env_cap;
  if (raw.env_max_dff) env_cap = parse_max_dff(*raw.env_max_dff, kEnvFusedMoeMaxDff);

  if (raw.flag_fused) {
    s.mode = parse_fused_flag(*raw.flag_fused);
    s.mode_source = SettingSource::kFlag;
  } else if (env_mode) {
    s.mode = *env_mode;
    s.mode_source = SettingSource::kEnv;
  }
  if (raw.flag_max_dff) {
    s.max_dff = parse_max_dff(*raw.flag_max_dff, "--max-dff");
    s.max_dff_source = SettingSource::kFlag;
  } else if (env_cap) {
    s.max_dff = env_cap;
    s.max_dff_source = SettingSource::kEnv;
  }
  return s;
}

RawFusedSettings with_environment(RawFusedSettings raw) {
  raw.env_fused = env_value(kEnvFusedMoe);
  raw.env_max_dff = env_value(kEnvFusedMoeMaxDff);
  return raw;
}

ProjectionQuant projection_quant_of(const kernels::QuantWeightsView& w) {
  ProjectionQuant q;
  q.mode = w.mode;
  q.bits = w.bits;
  q.group_size = w.group_size;
  q.has_biases = w.biases != nullptr;
  return q;
}

DispatchDecision decide_path(const DispatchInputs& in) {
  DispatchDecision d;
  d.mode = in.settings.mode;
  d.mode_source = in.settings.mode_source;
  d.dff = in.dff;
  d.tokens = in.tokens;
  auto add = [&](DeclineReason r) {
    if (!d.declined_for(r)) d.reasons.push_back(r);
  };

  // The cap in force: flag/env > calibration > backend default.
  if (in.settings.max_dff) {
    d.cap = *in.settings.max_dff;
    d.cap_source = in.settings.max_dff_source;
  } else if (in.calibration) {
    d.cap = in.calibration->cap;
    d.cap_source = CapSource::kCalibration;
    d.cap_origin = in.calibration->origin;
  } else {
    d.cap = backend_default_max_dff(in.backend);
    d.cap_source = CapSource::kBackendDefault;
  }
  d.cap_ignored = in.settings.mode == FusedMode::kOn;

  if (in.settings.mode == FusedMode::kOff) add(DeclineReason::kDisabled);
  if (!in.backend_has_fused_kernel) add(DeclineReason::kNoFusedKernelForBackend);
  if (in.tokens != 1) add(DeclineReason::kNotSingleToken);
  if (!in.stacked) add(DeclineReason::kNotStacked);

  const bool has_gate = in.act != kernels::Activation::kSquaredReLU;
  struct Proj {
    const ProjectionQuant* q;
    int64_t k;  // input dim
  };
  Proj projs[3] = {{&in.up, in.din}, {&in.down, in.dff}, {&in.gate, in.din}};
  for (int i = 0; i < (has_gate ? 3 : 2); ++i) {
    const ProjectionQuant& q = *projs[i].q;
    if (q.mode == quant::Mode::kFloat) {  // unquantized: no groups; 16- or 32-bit elements
      if (q.bits != 16 && q.bits != 32) add(DeclineReason::kBitsUnsupported);
      continue;
    }
    if (q.mode == quant::Mode::kAffine && !q.has_biases) {
      add(DeclineReason::kNotQuantized);  // scales without biases: not an affine matrix
      continue;
    }
    if (quant::is_ggml_mode(q.mode)) {  // a GGUF block format: its own bits and group sizes
      const quant::Format f = quant::Format::ggml(q.mode, q.bits, q.group_size);
      if (quant::format_unsupported_reason(f)) add(DeclineReason::kBitsUnsupported);
      else if (quant::format_unsupported_reason(f, projs[i].k)) add(DeclineReason::kGroupSizeMismatch);
      continue;
    }
    const bool fp = quant::is_fp_mode(q.mode);
    if (fp ? q.bits != quant::fp_mode_bits(q.mode) : !quant::is_valid_bits(q.bits))
      add(DeclineReason::kBitsUnsupported);
    const bool group_ok = fp ? q.group_size == quant::fp_mode_group_size(q.mode)
                             : quant::is_valid_group_size(q.group_size);
    if (!group_ok || projs[i].k % q.group_size != 0) add(DeclineReason::kGroupSizeMismatch);
  }

  if (in.settings.mode == FusedMode::kAuto && in.dff > d.cap) add(DeclineReason::kDffAboveCap);
  d.path = d.reasons.empty() ? Path::kFused : Path::kFallback;
  return d;
}

bool DispatchDecision::declined_for(DeclineReason r) const {
  return std::find(reasons.begin(), reasons.end(), r) != reasons.end();
}

std::string DispatchDecision::explanation() const {
  std::string cap_from;
  switch (cap_source) {
    case CapSource::kFlag:
      cap_from = "flag --max-dff";
      break;
    case CapSource::kEnv:
      cap_from = str_cat("env ", kEnvFusedMoeMaxDff);
      break;
    case CapSource::kCalibration:
      cap_from = str_cat("calibration ", cap_origin);
      break;
    case CapSource::kBackendDefault:
    case CapSource::kMeasurement:
      cap_from = "backend default";
      break;
  }
  const std::string mode_from =
      mode_source == SettingSource::kFlag          ? "flag --fused"
      : mode_source == SettingSource::kEnv         ? str_cat("env ", kEnvFusedMoe)
      : mode_source == SettingSource::kMeasurement ? std::string("the policy's online measurement")
                                                   : "default";
  if (path == Path::kFused) {
    if (cap_ignored)
      return str_cat("fused (mode on from ", mode_from, "; cap ", cap, " from ", cap_from,
                     " ignored, Dff ", dff, ")");
    return str_cat("fused (Dff ", dff, " <= cap ", cap, " from ", cap_from, ")");
  }
  std::string s = "fallback:";
  for (size_t i = 0; i < reasons.size(); ++i) {
    s += i ? ", " : " ";
    s += decline_reason_name(reasons[i]);
    switch (reasons[i]) {
      case DeclineReason::kDffAboveCap:
        s += str_cat(" (Dff ", dff, " > cap ", cap, " from ", cap_from, ")");
        break;
      case DeclineReason::kNotSingleToken:
        s += str_cat(" (M = ", tokens, ")");
        break;
      case DeclineReason::kDisabled:
        s += str_cat(" (mode off from ", mode_from, ")");
        break;
      default:
        break;
    }
  }
  return s;
}

}  // namespace moex::moe
