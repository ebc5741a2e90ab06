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

}  // namespace
}  // namespace moex
