// parse_json_text_strict: a repeated key is named with the object that holds it, and only
// objects down to duplicate_keys_max_depth are checked; the depth bound counts arrays too.
#include "core/json_text.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

namespace moex {
namespace {

// The Error's message, or "" when the text parses.
std::string error_of(const std::string& text, const JsonTextRules& rules) {
  try {
    (void)parse_json_text_strict(text, "f.json", rules);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(JsonText, RepeatedKeysAreNamedWithTheirObject) {
  const JsonTextRules all;
  struct Case {
    std::string text, want;
  };
  const Case cases[] = {
      {R"({"a": 1, "a": 2})", "f.json: duplicate JSON key 'a' in the top-level object"},
      {R"({"model": {"type": "BPE", "type": "WordPiece"}})", "duplicate JSON key 'type' in model;"},
      {R"({"m": {"n": {"k": 1, "k": 2}}})", "duplicate JSON key 'k' in m.n;"},
      {R"({"list": [1, {"x": 0}, {"k": 1, "k": 2}]})", "duplicate JSON key 'k' in list[2];"},
      {R"([[0], [{"k": 1, "k": 2}]])", "duplicate JSON key 'k' in [1][0];"},
      {R"({"a": [{}, [], 3], "b": {"c": {"d": 1, "d": 1}}})", "duplicate JSON key 'd' in b.c;"},
  };
  for (const Case& c : cases) {
    const std::string got = error_of(c.text, all);
    EXPECT_NE(got.find(c.want), std::string::npos) << c.text << " -> " << got;
  }
  // The same key in different objects, and a key equal to its object's name, are fine.
  EXPECT_EQ(error_of(R"({"k": {"k": 1}, "b": {"k": 2}, "l": [{"k": 3}, {"k": 4}]})", all), "");
}

TEST(JsonText, DuplicateKeysCheckedOnlyDownToTheirDepth) {
  JsonTextRules top2;
  top2.duplicate_keys_max_depth = 2;
  EXPECT_NE(error_of(R"({"model": 1, "model": 2})", top2), "");
  EXPECT_NE(error_of(R"({"model": {"t": 1, "t": 2}})", top2), "");
  EXPECT_EQ(error_of(R"({"model": {"vocab": {"a": 1, "a": 2}}})", top2), "");  // depth 3
  EXPECT_EQ(error_of(R"({"l": [{"a": 1, "a": 2}]})", top2), "");  // depth 3 (the array is 2)
  JsonTextRules none;
  none.reject_duplicate_keys = false;
  EXPECT_EQ(error_of(R"({"a": 1, "a": 2})", none), "");
  // nlohmann keeps the last of a repeated key where it is allowed.
  EXPECT_EQ(parse_json_text_strict(R"({"m": {"v": {"a": 1, "a": 2}}})", "f", top2)["m"]["v"]["a"],
            2);
}

TEST(JsonText, NestingBoundCountsArraysAndObjects) {
  JsonTextRules r;
  r.max_depth = 3;
  EXPECT_EQ(error_of(R"([{"a": [1]}])", r), "");
  EXPECT_NE(error_of(R"([{"a": [[1]]}])", r).find("nesting deeper than 3"), std::string::npos);
  EXPECT_NE(error_of(R"({"a": {"b": {"c": {}}}})", r).find("nesting deeper than 3"),
            std::string::npos);
}

}  // namespace
}  // namespace moex
