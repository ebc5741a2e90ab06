// decide_path() and resolve_fused_settings() tested as tables: every decline condition,
// every precedence case (flag > env > calibration > backend default), every malformed value.
#include "moe/dispatch_policy.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"

namespace moex::moe {
namespace {

using R = DeclineReason;

// A single-token, 4-bit, stacked Qwen3-like layer that the fused path accepts.
DispatchInputs fusable() {
  DispatchInputs in;
  in.tokens = 1;
  in.dff = 768;
  in.din = 2048;
  in.top_k = 8;
  return in;
}

struct DeclineCase {
  const char* name;
  std::function<void(DispatchInputs&)> edit;
  std::vector<R> reasons;  // expected, in decide_path's order
};

TEST(DispatchPolicy, DeclineTable) {
  const std::vector<DeclineCase> cases = {
      {"fusable", [](DispatchInputs&) {}, {}},
      {"prefill", [](DispatchInputs& in) { in.tokens = 8; }, {R::kNotSingleToken}},
      {"zero_tokens", [](DispatchInputs& in) { in.tokens = 0; }, {R::kNotSingleToken}},
      // Unquantized projections run fused too (the row kernels take F32/F16/BF16) ...
      {"float_down",
       [](DispatchInputs& in) {
         in.down.mode = quant::Mode::kFloat;
         in.down.bits = 16;
         in.down.group_size = 0;
         in.down.has_biases = false;
       },
       {}},
      // ... with 16- or 32-bit elements only.
      {"float_8_bits",
       [](DispatchInputs& in) {
         in.up.mode = quant::Mode::kFloat;
         in.up.bits = 8;
         in.up.group_size = 0;
       },
       {R::kBitsUnsupported}},
      // The fp modes run fused like affine ones (the row kernels cover them) ...
      {"mxfp4_everywhere",
       [](DispatchInputs& in) {
         for (ProjectionQuant* p : {&in.gate, &in.up, &in.down}) {
           p->mode = quant::Mode::kMxfp4;
           p->bits = 4;
           p->group_size = 32;
           p->has_biases = false;
         }
       },
       {}},
      {"nvfp4_up", [](DispatchInputs& in) {
         in.up.mode = quant::Mode::kNvfp4;
         in.up.group_size = 16;
         in.up.has_biases = false;
       }, {}},
      // ... but only with their own bits and group size.
      {"mxfp8_with_4_bits", [](DispatchInputs& in) {
         in.down.mode = quant::Mode::kMxfp8;
         in.down.group_size = 32;
       }, {R::kBitsUnsupported}},
      {"mxfp4_group_64", [](DispatchInputs& in) { in.gate.mode = quant::Mode::kMxfp4; },
       {R::kGroupSizeMismatch}},
      {"no_biases", [](DispatchInputs& in) { in.up.has_biases = false; }, {R::kNotQuantized}},
      {"bits_7", [](DispatchInputs& in) { in.down.bits = 7; }, {R::kBitsUnsupported}},
      {"bits_1", [](DispatchInputs& in) { in.gate.bits = 1; }, {R::kBitsUnsupported}},
      {"group_48", [](DispatchInputs& in) { in.up.group_size = 48; }, {R::kGroupSizeMismatch}},
      {"group_not_dividing_dff",
       [](DispatchInputs& in) {
         in.dff = 800;
         in.down.group_size = 128;
       },
       {R::kGroupSizeMismatch}},
      {"unstacked", [](DispatchInputs& in) { in.stacked = false; }, {R::kNotStacked}},
      {"dff_above_default_cap", [](DispatchInputs& in) { in.dff = kCpuDefaultMaxDff + 64; }, {R::kDffAboveCap}},
      {"dff_at_cap", [](DispatchInputs& in) { in.dff = kCpuDefaultMaxDff; }, {}},
      {"off", [](DispatchInputs& in) { in.settings.mode = FusedMode::kOff; }, {R::kDisabled}},
      {"no_backend_kernel",
       [](DispatchInputs& in) {
         in.backend = Backend::kCuda;
         in.backend_has_fused_kernel = false;
       },
       {R::kNoFusedKernelForBackend}},
      // Mixed widths and group sizes per projection are all supported by the kernels.
      {"mixed_bits_and_groups",
       [](DispatchInputs& in) {
         in.gate.bits = 3;
         in.up.bits = 5;
         in.down.bits = 6;
         in.dff = 776;            // 6-bit down with Dff % 16 != 0 is fine too
         in.down.group_size = 8;  // ... but 8 is not a valid group size
       },
       {R::kGroupSizeMismatch}},
      {"mixed_bits_ok",
       [](DispatchInputs& in) {
         in.gate.bits = 2;
         in.up.bits = 8;
         in.down.bits = 6;
         in.gate.group_size = 32;
         in.down.group_size = 128;
       },
       {}},
      // Squared ReLU has no gate projection: its (garbage) quantization is not looked at.
      {"relu2_ignores_gate",
       [](DispatchInputs& in) {
         in.act = kernels::Activation::kSquaredReLU;
         in.gate.bits = 7;
         in.gate.group_size = 48;
       },
       {}},
      {"on_ignores_cap",
       [](DispatchInputs& in) {
         in.dff = 14336;
         in.settings.mode = FusedMode::kOn;
       },
       {}},
      {"on_cannot_force_prefill",
       [](DispatchInputs& in) {
         in.settings.mode = FusedMode::kOn;
         in.tokens = 2;
       },
       {R::kNotSingleToken}},
      {"several_reasons",
       [](DispatchInputs& in) {
         in.tokens = 4;
         in.dff = 20480;
         in.stacked = false;
         in.down.bits = 7;
         in.settings.mode = FusedMode::kOff;
       },
       {R::kDisabled, R::kNotSingleToken, R::kNotStacked, R::kBitsUnsupported}},
  };
  for (const auto& c : cases) {
    DispatchInputs in = fusable();
    c.edit(in);
    const DispatchDecision d = decide_path(in);
    EXPECT_EQ(d.reasons, c.reasons) << c.name << ": " << d.explanation();
    EXPECT_EQ(d.path, c.reasons.empty() ? Path::kFused : Path::kFallback) << c.name;
    for (R r : c.reasons) {
      EXPECT_TRUE(d.declined_for(r)) << c.name;
      EXPECT_NE(d.explanation().find(decline_reason_name(r)), std::string::npos) << c.name;
    }
  }
}

struct CapCase {
  const char* name;
  RawFusedSettings raw;
  std::optional<int64_t> calibration;
  Backend backend;
  int64_t cap;
  CapSource source;
  FusedMode mode;
};

TEST(DispatchPolicy, PrecedenceTable) {
  const std::vector<CapCase> cases = {
      {"cpu_default",
       {},
       {},
       Backend::kCpu,
       kCpuDefaultMaxDff,
       CapSource::kBackendDefault,
       FusedMode::kAuto},
      {"cuda_default",
       {},
       {},
       Backend::kCuda,
       kCudaDefaultMaxDff,
       CapSource::kBackendDefault,
       FusedMode::kAuto},
      {"calibration_beats_default",
       {},
       3072,
       Backend::kCpu,
       3072,
       CapSource::kCalibration,
       FusedMode::kAuto},
      {"env_beats_calibration",
       {{}, {}, {}, "5120"},
       3072,
       Backend::kCpu,
       5120,
       CapSource::kEnv,
       FusedMode::kAuto},
      {"flag_beats_env",
       {{}, "7168", {}, "5120"},
       3072,
       Backend::kCpu,
       7168,
       CapSource::kFlag,
       FusedMode::kAuto},
      {"flag_alone",
       {{}, "128", {}, {}},
       {},
       Backend::kCuda,
       128,
       CapSource::kFlag,
       FusedMode::kAuto},
      {"env_off",
       {{}, {}, "0", {}},
       {},
       Backend::kCpu,
       kCpuDefaultMaxDff,
       CapSource::kBackendDefault,
       FusedMode::kOff},
      {"env_OFF_upper",
       {{}, {}, "OFF", {}},
       {},
       Backend::kCpu,
       kCpuDefaultMaxDff,
       CapSource::kBackendDefault,
       FusedMode::kOff},
      {"env_yes_is_auto",
       {{}, {}, "Yes", {}},
       {},
       Backend::kCpu,
       kCpuDefaultMaxDff,
       CapSource::kBackendDefault,
       FusedMode::kAuto},
      {"flag_on_beats_env_off",
       {"on", {}, "false", {}},
       {},
       Backend::kCpu,
       kCpuDefaultMaxDff,
       CapSource::kBackendDefault,
       FusedMode::kOn},
      {"flag_off_beats_env_on",
       {"off", {}, "1", {}},
       {},
       Backend::kCpu,
       kCpuDefaultMaxDff,
       CapSource::kBackendDefault,
       FusedMode::kOff},
      {"flag_auto",
       {"AUTO", {}, "no", {}},
       {},
       Backend::kCpu,
       kCpuDefaultMaxDff,
       CapSource::kBackendDefault,
       FusedMode::kAuto},
  };
  for (const auto& c : cases) {
    DispatchInputs in = fusable();
    in.backend = c.backend;
    in.settings = resolve_fused_settings(c.raw);
    if (c.calibration)
      in.calibration = CalibratedCap{*c.calibration, "test.json (x, y)", "", true};
    const DispatchDecision d = decide_path(in);
    EXPECT_EQ(d.cap, c.cap) << c.name;
    EXPECT_EQ(d.cap_source, c.source) << c.name;
    EXPECT_EQ(d.mode, c.mode) << c.name;
    // The cap actually decides in auto mode: Dff just above it declines, at it runs fused
    // (every cap in this table is a multiple of the group size, so Dff = cap is fusable).
    if (c.mode == FusedMode::kAuto) {
      in.dff = c.cap + 1;
      EXPECT_TRUE(decide_path(in).declined_for(R::kDffAboveCap)) << c.name;
      in.dff = c.cap;
      EXPECT_EQ(decide_path(in).path, Path::kFused) << c.name;
    }
  }
}

TEST(DispatchPolicy, ModeAndCapSourcesAreReported) {
  DispatchInputs in = fusable();
  in.settings = resolve_fused_settings({{}, {}, {}, "512"});
  const DispatchDecision d = decide_path(in);
  EXPECT_EQ(d.path, Path::kFallback);
  EXPECT_NE(d.explanation().find("MOEX_FUSED_MOE_MAX_DFF"), std::string::npos) << d.explanation();
  in.settings = resolve_fused_settings({"on", "512", {}, {}});
  const DispatchDecision on = decide_path(in);
  EXPECT_EQ(on.path, Path::kFused);
  EXPECT_TRUE(on.cap_ignored);
  EXPECT_NE(on.explanation().find("ignored"), std::string::npos) << on.explanation();
  in.calibration = CalibratedCap{600, "cal.json (cpu0, 2026-01-01T00:00:00Z)", "", true};
  in.settings = {};
  EXPECT_NE(decide_path(in).explanation().find("cal.json"), std::string::npos);
}

struct MalformedCase {
  RawFusedSettings raw;
  const char* must_name;    // the flag / variable in the message
  const char* must_accept;  // the accepted forms in the message
};

TEST(DispatchPolicy, MalformedValuesAreErrorsNamingTheSource) {
  std::vector<MalformedCase> cases;
  for (const char* bad : {"", " 4096", "4096 ", "abc", "0", "-1", "9999999999", "+5", "4k"}) {
    cases.push_back({{{}, {}, {}, bad}, "MOEX_FUSED_MOE_MAX_DFF", "integer"});
    cases.push_back({{{}, bad, {}, {}}, "--max-dff", "integer"});
  }
  for (const char* bad : {"", " 1", "2", "enable", "auto", "o n"})
    cases.push_back({{{}, {}, bad, {}}, "MOEX_FUSED_MOE", "0/false/off/no"});
  for (const char* bad : {"", "1", "yes", "force", " on"})
    cases.push_back({{bad, {}, {}, {}}, "--fused", "auto, on or off"});
  // A malformed env value is an error even when a flag overrides it.
  cases.push_back({{{}, "100", {}, "abc"}, "MOEX_FUSED_MOE_MAX_DFF", "integer"});
  cases.push_back({{"on", {}, "maybe", {}}, "MOEX_FUSED_MOE", "1/true/on/yes"});
  for (const auto& c : cases) {
    try {
      resolve_fused_settings(c.raw);
      ADD_FAILURE() << "accepted a malformed value for " << c.must_name;
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(c.must_name), std::string::npos) << msg;
      EXPECT_NE(msg.find(c.must_accept), std::string::npos) << msg;
    }
  }
}

TEST(DispatchPolicy, WithEnvironmentReadsBothVariables) {
  ::setenv(kEnvFusedMoe, "off", 1);
  ::setenv(kEnvFusedMoeMaxDff, "4096", 1);
  const FusedSettings s = resolve_fused_settings(with_environment({}));
  EXPECT_EQ(s.mode, FusedMode::kOff);
  EXPECT_EQ(s.mode_source, SettingSource::kEnv);
  EXPECT_EQ(s.max_dff, 4096);
  ::setenv(kEnvFusedMoeMaxDff, " 4096", 1);
  EXPECT_THROW(resolve_fused_settings(with_environment({})), Error);
  ::unsetenv(kEnvFusedMoe);
  ::unsetenv(kEnvFusedMoeMaxDff);
  const FusedSettings d = resolve_fused_settings(with_environment({}));
  EXPECT_EQ(d.mode, FusedMode::kAuto);
  EXPECT_FALSE(d.max_dff.has_value());
}

TEST(DispatchPolicy, IsPure) {
  DispatchInputs in = fusable();
  in.dff = 9000;
  const DispatchDecision a = decide_path(in), b = decide_path(in);
  EXPECT_EQ(a.path, b.path);
  EXPECT_EQ(a.reasons, b.reasons);
  EXPECT_EQ(a.explanation(), b.explanation());
}

}  // namespace
}  // namespace moex::moe
