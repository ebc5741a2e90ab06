// Strict parsing: every malformed form the prior system (docs/background.md §2) silently accepted is an error.
#include "core/strict_parse.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace moex {
namespace {

TEST(StrictParse, IntegersAccepted) {
  EXPECT_EQ(parse_int_strict("4096", "X", 1, 1 << 20), 4096);
  EXPECT_EQ(parse_int_strict("1", "X", 1, 10), 1);
}

TEST(StrictParse, MalformedIntegersRejectedWithName) {
  for (const char* bad : {"", " 4096", "4096 ", "abc", "0", "-1", "9999999999", "+5", "4e3", "0x10"}) {
    try {
      parse_int_strict(bad, "MOEX_FUSED_MOE_MAX_DFF", 1, 1 << 20);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("MOEX_FUSED_MOE_MAX_DFF"), std::string::npos) << e.what();
    }
  }
}

TEST(StrictParse, Switches) {
  for (const char* t : {"1", "true", "ON", "Yes"}) EXPECT_TRUE(parse_bool_switch(t, "V"));
  for (const char* f : {"0", "False", "off", "NO"}) EXPECT_FALSE(parse_bool_switch(f, "V"));
  for (const char* bad : {"", " 1", "2", "enable"}) EXPECT_THROW(parse_bool_switch(bad, "V"), Error);
}

TEST(StrictParse, Doubles) {
  EXPECT_DOUBLE_EQ(parse_double_strict("0.5", "T"), 0.5);
  for (const char* bad : {"", " 1", "1x", "nan", "inf"}) EXPECT_THROW(parse_double_strict(bad, "T"), Error);
}

}  // namespace
}  // namespace moex
