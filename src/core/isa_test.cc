// ISA detection and forcing.
#include "core/isa.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace moex {
namespace {

TEST(Isa, ParseAndName) {
  for (Isa i : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) EXPECT_EQ(parse_isa(isa_name(i), "--isa"), i);
  EXPECT_THROW(parse_isa("sse2", "--isa"), Error);
}

TEST(Isa, SupportedListIsOrderedAndForceable) {
  auto v = supported_isas();
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v.front(), Isa::kScalar);
  EXPECT_EQ(v.back(), best_supported_isa());
  for (Isa i : v) {
    set_active_isa(i);
    EXPECT_EQ(active_isa(), i);
  }
}

// Selection over the feature sets of real CPUs. Cascade Lake has AVX-512 VNNI but no VBMI: it
// must get the AVX-512 level (it silently ran AVX2 when VBMI was required).
TEST(Isa, SelectionOverRealCpuFeatureSets) {
  CpuFeatures haswell;
  haswell.avx2 = haswell.fma = haswell.f16c = haswell.bmi2 = true;
  CpuFeatures skylake_x = haswell;  // AVX-512 without VNNI
  skylake_x.avx512f = skylake_x.avx512bw = skylake_x.avx512vl = skylake_x.avx512dq = true;
  CpuFeatures cascade_lake = skylake_x;
  cascade_lake.avx512vnni = true;
  CpuFeatures ice_lake = cascade_lake;  // also Sapphire Rapids, Zen 4 and Zen 5
  ice_lake.avx512vbmi = true;
  CpuFeatures no_fma = haswell;
  no_fma.fma = false;
  CpuFeatures avx512_without_avx2 = ice_lake;  // not a real CPU: each level needs the one below
  avx512_without_avx2.avx2 = false;
  const struct {
    const char* cpu;
    CpuFeatures f;
    Isa best;
  } table[] = {
      {"none", CpuFeatures{}, Isa::kScalar},
      {"haswell", haswell, Isa::kAvx2},
      {"no_fma", no_fma, Isa::kScalar},
      {"skylake_x", skylake_x, Isa::kAvx2},
      {"cascade_lake", cascade_lake, Isa::kAvx512},
      {"ice_lake", ice_lake, Isa::kAvx512},
      {"avx512_without_avx2", avx512_without_avx2, Isa::kScalar},
  };
  for (const auto& row : table) {
    EXPECT_EQ(best_isa_for(row.f), row.best) << row.cpu;
    EXPECT_TRUE(isa_supported_by(row.f, Isa::kScalar)) << row.cpu;
    EXPECT_EQ(isa_supported_by(row.f, Isa::kAvx512), row.best == Isa::kAvx512) << row.cpu;
  }
  EXPECT_EQ(best_isa_for(detect_cpu_features()), best_supported_isa());
}

TEST(Isa, VbmiCanBeSwitchedOffAndOnlyOnWhereTheCpuHasIt) {
  const bool has = detect_cpu_features().avx512vbmi;
  EXPECT_EQ(avx512_vbmi_active(), has);
  set_avx512_vbmi_enabled(false);
  EXPECT_FALSE(avx512_vbmi_active());
  if (has) {
    set_avx512_vbmi_enabled(true);
    EXPECT_TRUE(avx512_vbmi_active());
  } else {
    EXPECT_THROW(set_avx512_vbmi_enabled(true), Error);
  }
}

}  // namespace
}  // namespace moex
