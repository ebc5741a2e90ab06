// Render-time errors: what jinja2 raises, moex raises too, as a moex::Error naming the template,
// the line and column of the innermost expression, and Python's exception class.
#include "chat/chat_test_util.h"

namespace moex::chat::testing {
namespace {

TEST(ChatErrors, RaiseExceptionCarriesTheTemplatesMessage) {
  EXPECT_EQ(
      error_of("line one\n{%- if messages[0].role != 'user' %}\n  {{- raise_exception('Only user "
               "turns') }}\n{%- endif %}",
               R"({"messages": [{"role": "system"}]})"),
      "t:3:7: TemplateError: Only user turns");
}

TEST(ChatErrors, UndefinedAttributeOfUndefined) {
  EXPECT_EQ(error_of("\n\n{{ nothing.content }}"),
            "t:3:12: UndefinedError: 'nothing' is undefined");
  EXPECT_EQ(error_of("{{ m.a.b }}", R"({"m": {}})"),
            "t:1:8: UndefinedError: 'dict object' has no attribute 'a'");
}

TEST(ChatErrors, UnknownFilterOrTestAtParseTimeUnlessInsideIf) {
  EXPECT_EQ(error_of("ok\n{{ x|from_json }}"), "t:2:6: no filter named 'from_json'");
  EXPECT_EQ(error_of("{% for x in y %}{{ x is frob }}{% endfor %}"),
            "t:1:25: no test named 'frob'");
  // Inside an if, jinja2 only fails when the filter runs; a for loop inside the if is checked.
  EXPECT_EQ(render("{% if false %}{{ x|from_json }}{% endif %}done"), "done");
  EXPECT_EQ(error_of("{% if false %}{% for a in b %}{{ a|from_json }}{% endfor %}{% endif %}"),
            "t:1:36: no filter named 'from_json'");
}

TEST(ChatErrors, SandboxRefusesMutation) {
  EXPECT_EQ(error_of("{% set l = [] %}{% set _ = l.append(1) %}"),
            "t:1:30: SecurityError: access to attribute 'append' of 'list' object is unsafe.");
  EXPECT_EQ(error_of("{{ {}.pop('a') }}"),
            "t:1:7: SecurityError: access to attribute 'pop' of 'dict' object is unsafe.");
}

TEST(ChatErrors, TypeErrorsNameTheTypes) {
  EXPECT_EQ(error_of("{{ 'a' + 1 }}"),
            "t:1:8: TypeError: can only concatenate str (not \"int\") to str");
  EXPECT_EQ(error_of("{{ 1 / 0 }}"), "t:1:6: ZeroDivisionError: division by zero");
  EXPECT_EQ(error_of("{{ none|length }}"),
            "t:1:9: TypeError: object of type 'NoneType' has no len()");
  EXPECT_EQ(error_of("{{ 9223372036854775807 + 1 }}"),
            "t:1:24: OverflowError: integer result out of 64-bit range");
}

TEST(ChatErrors, NumbersBeyondInt64AreErrorsNotCrashes) {
  // Python's int has no bound; moex's is int64, and a longer digit run is a named error (a
  // fuzzer found std::stoll's out_of_range escaping from 'x.<digits>').
  EXPECT_EQ(error_of("{% for a in b.99999999999999999999 %}{% endfor %}"),
            "t:1:15: number '99999999999999999999' after '.' is out of range");
  EXPECT_EQ(error_of("{{ '{99999999999999999999}'.format(1) }}"), "t:1:29: ValueError: Too many decimal digits in format string");
  EXPECT_EQ(error_of("{{ [[1]]|map(attribute='99999999999999999999')|list }}"), "t:1:10: IndexError: attribute '99999999999999999999': index 99999999999999999999 is out of range");
  EXPECT_EQ(render("{{ '{0[1x]}{0[1]}'.format({'1x': 5, 1: 6}) }}"), "56");
  EXPECT_EQ(error_of("{{ '{1x}'.format(1) }}"), "t:1:11: KeyError: '1x'");
}

TEST(ChatErrors, MacroErrorsPointInsideTheMacro) {
  EXPECT_EQ(error_of("{% macro m(x) %}\n  {{ x.y.z }}\n{% endmacro %}{{ m({}) }}"),
            "t:2:10: UndefinedError: 'dict object' has no attribute 'y'");
}

TEST(ChatErrors, ApplyChatTemplateRejectsBadMessages) {
  const Template t = Template::parse("{{ messages|length }}", "t");
  ChatTemplateArgs a;
  EXPECT_THROW(apply_chat_template(t, a), Error);  // empty conversation
  a.messages = nlohmann::ordered_json::parse(R"([1])");
  EXPECT_THROW(apply_chat_template(t, a), Error);
  a.messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "x"}])");
  a.extra["messages"] = 1;
  EXPECT_THROW(apply_chat_template(t, a), Error);
}

}  // namespace
}  // namespace moex::chat::testing
