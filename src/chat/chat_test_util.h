// Helpers for the chat-template unit tests: render a template string over a JSON context, and
// run tables of {template, context, expected} cases whose expected text or exception class
// came from jinja2 as transformers configures it.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "chat/template.h"
#include "core/error.h"

namespace moex::chat::testing {

inline std::string render(const std::string& tpl, const std::string& ctx = "{}") {
  return Template::parse(tpl, "t").render(nlohmann::ordered_json::parse(ctx));
}

// The moex::Error message of parsing or rendering, or "" when it succeeds.
inline std::string error_of(const std::string& tpl, const std::string& ctx = "{}") {
  try {
    render(tpl, ctx);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

struct Case {
  const char* name;
  const char* tpl;
  const char* ctx;
  const char* expected;  // the output, or jinja2's "ExceptionClass: message" when !ok
  bool ok;
};

// ok cases must render byte for byte; failing ones must raise naming the same exception class.
inline void run_case(const Case& c) {
  SCOPED_TRACE(c.name);
  if (c.ok) {
    std::string got;
    try {
      got = render(c.tpl, c.ctx);
    } catch (const Error& e) {
      ADD_FAILURE() << c.name << ": raised " << e.what();
      return;
    }
    EXPECT_EQ(got, c.expected) << c.name;
    return;
  }
  const std::string err = error_of(c.tpl, c.ctx);
  const std::string expected = c.expected;
  const std::string cls = expected.substr(0, expected.find(':'));
  EXPECT_NE(err, "") << c.name << ": rendered, but jinja2 raises " << expected;
  EXPECT_NE(err.find(cls), std::string::npos)
      << c.name << ": " << err << " (jinja2: " << expected << ")";
}

}  // namespace moex::chat::testing
