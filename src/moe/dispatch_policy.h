// The MoE dispatch policy: ONE pure function, decide_path(), choosing between the fused
// decode kernel and the gather_qmm fallback for an expert layer, and saying why. Settings
// (flag > environment > calibration file > backend default) are resolved beforehand by
// resolve_fused_settings(), which rejects malformed values instead of ignoring them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/moe_contract.h"
#include "quant/format.h"

namespace moex::moe {

enum class Path { kFused, kFallback };
const char* path_name(Path p);  // "fused", "fallback"

enum class Backend { kCpu, kCuda };
const char* backend_name(Backend b);                               // "cpu", "cuda"
Backend parse_backend(std::string_view s, std::string_view what);  // throws Error naming what

// Why the fused path declined. Only conditions the fused kernels really cannot handle: the
// kernels run every bit width 2..8 for each projection independently, each projection with
// its own group size, and every activation, so the prior system's "gate/up bits in {4,8}", "gate and
// up bits differ" and "6-bit down with Dff % 16" conditions are gone.
enum class DeclineReason {
  kNotSingleToken,          // M != 1: the fused kernel is single-token decode
  kNotQuantized,            // a projection is float, or affine-quantized without biases
  kBitsUnsupported,         // a projection's bits are not one of 2,3,4,5,6,8
  kGroupSizeMismatch,       // a group size not in {32,64,128} or not dividing its input dim
  kNotStacked,              // experts are not one 3-D stacked tensor per projection
  kDffAboveCap,             // Dff > the cap (auto mode only)
  kDisabled,                // fused mode off (flag or MOEX_FUSED_MOE)
  kNoFusedKernelForBackend  // the backend has no fused kernel in this build
};
inline constexpr int kNumDeclineReasons = 8;
const char* decline_reason_name(DeclineReason r);  // "not_single_token", ...

enum class FusedMode { kAuto, kOn, kOff };
const char* fused_mode_name(FusedMode m);  // "auto", "on", "off"

// Where a setting came from, highest precedence first.
enum class SettingSource { kFlag, kEnv, kCalibration, kBackendDefault, kMeasurement };
using CapSource = SettingSource;
// "flag", "env", "calibration", "default", "measurement" (the engine's online measurement,
// moe/online_measure.h, forcing each path in turn)
const char* setting_source_name(SettingSource s);

// Backend defaults of the Dff cap.
// CUDA: moex's own kernels on an H200 (docs/benchmark_results/cuda-h200-moe-block.md,
// 2026-11-29; raw data benchmarks/cuda-h200-2026-11-29-v2/sweep.csv): first crossings at
// Dff ~3260 (Din 4096, top-2) and ~11440 (Din 2048, top-8); the smallest, rounded down to a
// multiple of 256. (The prior system's 8192 came from a GB10 with MLX's kernels, docs/background.md §2.)
inline constexpr int64_t kCudaDefaultMaxDff = 3072;
// CPU: a prior for hosts nobody tuned, used until the engine's online measurement (moe/
// online_measure.h) has timed both paths on this host, and whenever that measurement is turned
// off. Derived on the 2-core Intel Xeon (AVX-512) VM (docs/benchmark_results/cpu-moe-2026-11-29.md;
// raw data benchmarks/cpu-2026-11-29/): `moex tune` found no Dff in 256..16384 where fused is
// slower than the fallback beyond run-to-run noise, and the model-level sweep (Dff 768..14336)
// tied at every point; the 48-layer qwen3-30b-a3b run of 2026-12-02 measured the same
// (docs/benchmark_results/policy-measurement-48l-2026-12-02.md), and so did the re-derivation
// after the precision tiers, at the standard tier with the paired tie rule, on the 4- and
// 48-layer qwen3 and the 2-layer mixtral shapes (Dff 768 and 14336: ties with bands of
// 0.9-40%; docs/benchmark_results/policy-measurement-tiers-2026-12-02.md). On the 2-core AMD
// Zen 5 hosts of the same machine kind the fused path measured 5-7% slower at Dff 768 in
// earlier sessions, which this prior gets wrong; there the measurement, not this constant,
// makes the choice. No other host kind was lent to re-derive it on.
inline constexpr int64_t kCpuDefaultMaxDff = 16384;
int64_t backend_default_max_dff(Backend b);
// Largest accepted --max-dff / MOEX_FUSED_MOE_MAX_DFF / calibration cap.
inline constexpr int64_t kMaxDffLimit = int64_t{1} << 20;

// The user's choices after precedence; max_dff is unset when neither flag nor env gave one.
struct FusedSettings {
  FusedMode mode = FusedMode::kAuto;
  SettingSource mode_source = SettingSource::kBackendDefault;
  std::optional<int64_t> max_dff;
  SettingSource max_dff_source = SettingSource::kBackendDefault;
};

// Raw strings as given (unset = not given). Parsed strictly by resolve_fused_settings.
struct RawFusedSettings {
  std::optional<std::string> flag_fused;    // --fused auto|on|off
  std::optional<std::string> flag_max_dff;  // --max-dff N
  std::optional<std::string> env_fused;     // MOEX_FUSED_MOE: 0/false/off/no | 1/true/on/yes
  std::optional<std::string> env_max_dff;   // MOEX_FUSED_MOE_MAX_DFF: positive integer
};
inline constexpr const char* kEnvFusedMoe = "MOEX_FUSED_MOE";
inline constexpr const char* kEnvFusedMoeMaxDff = "MOEX_FUSED_MOE_MAX_DFF";

// Flag beats env. MOEX_FUSED_MOE=1 means "fused allowed" (auto: the cap applies), =0 "off";
// only --fused on forces the fused path past the cap. Throws Error naming the flag/variable
// and the accepted forms for a malformed value ("", " 4096", "abc", "0", "-1", too large).
FusedSettings resolve_fused_settings(const RawFusedSettings& raw);
// raw with the env_* fields read from the process environment.
RawFusedSettings with_environment(RawFusedSettings raw);

// The format of one projection as the checkpoint declares it (the fused kernel runs every
// format the row kernels do, unquantized F32/F16/BF16 included: mode kFloat, bits 16 or 32).
struct ProjectionQuant {
  quant::Mode mode = quant::Mode::kAffine;
  int bits = 4;
  int group_size = 64;
  bool has_biases = true;  // affine needs them; the fp modes and kFloat have none
};

struct CalibratedCap {
  int64_t cap = 0;
  std::string origin;  // "<file> (<hardware>, <date>)", shown in explanations
  std::string moex_commit;  // of the entry ("" when not from a file): another one is stale
  bool exact = true;        // the entry's key equals the lookup's (calibration.h)
};

struct DispatchInputs {
  // Problem shape.
  int64_t tokens = 1;  // M
  int64_t dff = 0, din = 0, top_k = 0;
  ProjectionQuant gate, up, down;  // gate ignored for kSquaredReLU
  bool stacked = true;
  kernels::Activation act = kernels::Activation::kSwiGLU;
  // Backend and what this build has for it.
  Backend backend = Backend::kCpu;
  bool backend_has_fused_kernel = true;
  // Settings and calibration.
  FusedSettings settings;
  std::optional<CalibratedCap> calibration;
};

struct DispatchDecision {
  Path path = Path::kFused;
  std::vector<DeclineReason> reasons;  // empty iff path == kFused
  int64_t cap = 0;                     // the cap in force (reported even when ignored)
  CapSource cap_source = CapSource::kBackendDefault;
  bool cap_ignored = false;  // --fused on / MOEX mode on: cap not applied
  std::string cap_origin;    // calibration origin, if cap_source == kCalibration
  FusedMode mode = FusedMode::kAuto;
  SettingSource mode_source = SettingSource::kBackendDefault;
  int64_t dff = 0, tokens = 0;

  bool declined_for(DeclineReason r) const;
  // One line: "fallback: dff_above_cap (Dff 14336 > cap 8192 from env MOEX_FUSED_MOE_MAX_DFF)".
  std::string explanation() const;
};

// The policy. Pure: the same inputs always give the same decision.
DispatchDecision decide_path(const DispatchInputs& in);

// The ProjectionQuant of a QuantWeightsView.
ProjectionQuant projection_quant_of(const kernels::QuantWeightsView& w);

}  // namespace moex::moe
